"""Remote scale: many concurrent sessions streaming through one `acpstack serve` process.

`python -m benchmarks.remote_scale [--connections 100] [--sessions 10] [--updates 100]`
starts `acpstack serve` (the bench agent, in process), runs peers/remote_load.py against
it over streamable HTTP and then WebSocket, and reports the server's RSS: idle, the peak
during the run (sampled every 50 ms from /proc), and after every connection closed, with
the growth per connection. Both processes share the machine's 2 cores (not pinned).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_kb(self.pid))
            time.sleep(0.05)


def start_server(python: str, max_connections: int) -> tuple[subprocess.Popen[str], int]:
    argv = [
        python,
        "-m",
        "acpstack",
        "serve",
        "--port",
        "0",
        "--agent",
        f"{HERE / 'peers' / 'acpstack_agent.py'}:BenchAgent",
        "--max-connections",
        str(max_connections),
        "--no-token",  # loopback, and the benchmark's clients carry none
    ]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"127\.0\.0\.1:(\d+)/acp", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"acpstack serve did not start: {line}")
    return proc, int(match.group(1))


def measure(python: str, connections: int, sessions: int, updates: int) -> dict[str, object]:
    proc, port = start_server(python, connections * 2)
    try:
        time.sleep(0.5)
        idle = rss_kb(proc.pid)
        out: dict[str, object] = {"server_idle_mb": idle / 1024}
        for profile in ("http", "ws"):
            sampler = Sampler(proc.pid)
            sampler.start()
            load = subprocess.run(
                [
                    python,
                    str(HERE / "peers" / "remote_load.py"),
                    f"{profile}://127.0.0.1:{port}/acp",
                    str(connections),
                    str(sessions),
                    str(updates),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            sampler.running = False
            sampler.join()
            if load.returncode != 0:
                raise RuntimeError(f"{profile}: {load.stderr.strip()[-500:]}")
            result = json.loads(load.stdout)
            time.sleep(1.0)  # let the server drop the closed connections
            after = rss_kb(proc.pid)
            out[profile] = {
                **result,
                "server_peak_mb": sampler.peak / 1024,
                "server_after_mb": after / 1024,
                "peak_growth_per_connection_kb": (sampler.peak - idle) / connections,
            }
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.remote_scale", description=__doc__)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=10, help="per connection")
    parser.add_argument("--updates", type=int, default=100, help="per session")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    print(json.dumps(measure(args.python, args.connections, args.sessions, args.updates), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
