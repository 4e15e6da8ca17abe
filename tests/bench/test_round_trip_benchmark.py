"""W10 (`python -m benchmarks.persisted_round_trip`), its breakdown
(`python -m benchmarks.prompt_commit_cost`) and the client's cost per update
(`python -m benchmarks.client_update_cost`) run end to end, small: the agents are real
processes over real pipes, the SQLite store a real file. The official SDKs and PostgreSQL
are left out here (their venvs, node and a server are the benchmark's to set up); the test
runs the peers with this interpreter instead of the benchmark's own venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.persisted_round_trip import RAW, agents, collect, medians, table

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]


def test_w10_measures_every_agent_and_prints_its_row(tmp_path: Path) -> None:
    commands = agents(sys.executable, str(tmp_path), None, with_sdks=False)
    assert list(commands) == [RAW, "SessionAgent + memory", "SessionAgent + SQLite"]
    client = [sys.executable, str(REPO / "benchmarks" / "peers" / "acpstack_client.py")]
    samples = collect(commands, client, 1, {**os.environ, "ACPSTACK_BENCH_QUICK": "1"})
    assert {name: len(values) for name, values in samples.items()} == dict.fromkeys(commands, 1)
    found = medians(samples)
    for name, m in found.items():
        assert 0 < m["p50"] <= m["p99"], (name, m)
    rows = table(found)
    assert len(rows) == 2 + len(commands)
    assert rows[2].startswith(f"| {RAW} |") and "| 1.00 | 1.00 | - |" in rows[2]
    # The SQLite agent stored every prompt (the warm-up's 302 and the 200 timed) and the
    # warm-up's 2,000 streamed chunks; other kinds of event may come on top.
    stored = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
            "print(c.execute('SELECT COALESCE(SUM(n), 0) FROM events').fetchone()[0])",
            str(tmp_path / "w10.sqlite3"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(stored.stdout) >= 2_502


def test_commit_cost_breakdown_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.prompt_commit_cost", "--events", "20", "--no-pin"],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=REPO,
        check=True,
    )
    for step in ("COMMIT", "empty hand-off", "writer, SQLite", "writer, memory"):
        assert step in done.stdout, done.stdout


def test_client_update_cost_runs_each_client_over_each_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.client_update_cost", "--updates", "200", "--reps", "1"],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=REPO,
        check=True,
    )
    rows = [line.rsplit(maxsplit=1) for line in done.stdout.splitlines()[1:]]
    assert [name.strip() for name, _ in rows] == [
        "v1 bare Client",
        "v1 ClientRuntime",
        "v2 bare Client",
        "v2 ClientRuntime",
    ]
    assert all(float(cost) > 0 for _, cost in rows), done.stdout
