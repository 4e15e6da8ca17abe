"""200 sessions streaming at once through one `acpstack serve` (20 connections x 10
sessions, both profiles), every chunk checked, with the server's memory per connection
bounded. The 1,000-session run is `python -m benchmarks.remote_scale` (docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _serving import serve_process

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]
LOAD = REPO / "benchmarks" / "peers" / "remote_load.py"
BENCH_AGENT = f"{REPO / 'benchmarks' / 'peers' / 'acpstack_agent.py'}:BenchAgent"
CONNECTIONS, SESSIONS, UPDATES = 20, 10, 50


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.parametrize("profile", ["http", "ws"])
def test_200_sessions_stream_at_once_with_bounded_memory(profile: str) -> None:
    with serve_process("--agent", BENCH_AGENT) as served:
        url = f"{profile}://127.0.0.1:{served.port}/acp"
        before = rss_kb(served.proc.pid)
        runs = []
        for _ in range(2):  # the second round must not need more memory than the first
            done = subprocess.run(
                [sys.executable, str(LOAD), url, str(CONNECTIONS), str(SESSIONS), str(UPDATES)],
                capture_output=True,
                text=True,
                timeout=100,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            runs.append((json.loads(done.stdout), rss_kb(served.proc.pid)))
        (first, after_first), (second, after_second) = runs
        assert first["updates"] == second["updates"] == CONNECTIONS * SESSIONS * UPDATES
        # Relative to this run's own figures (absolute sizes differ between machines and
        # Pythons): 200 sessions must not cost more than the idle server itself, and a second
        # round must not grow as the first did (a leak grows by the same each round).
        first_growth, second_growth = after_first - before, after_second - after_first
        assert first_growth < before, f"{before} KB idle, then {first_growth} KB more"
        assert second_growth <= max(first_growth // 2, before // 10), (
            f"grew {second_growth} KB in the second round, {first_growth} KB in the first"
        )
