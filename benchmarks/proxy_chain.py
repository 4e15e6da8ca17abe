"""`python -m benchmarks.proxy_chain`: W1 and W2 through a proxy chain against direct.

acpstack's benchmark client and agent (peers/acpstack_*.py), once directly and once through
`acpstack conduct` with two pass-through proxies (peers/pass_proxy.py): the chain adds two
processes and three hops each way. Prints one JSON object: each workload's figures both ways
and the ratio chain ÷ direct as a cost (above 1: the chain is slower). `--quick` runs the
smaller workloads; `--reps N` takes the median of N runs (default 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PEERS = Path(__file__).resolve().parent / "peers"
AGENT = [sys.executable, str(PEERS / "acpstack_agent.py")]
PASS = f"{sys.executable} {PEERS / 'pass_proxy.py'}"
CHAIN = [
    sys.executable,
    "-m",
    "acpstack",
    "conduct",
    "--proxy",
    PASS,
    "--proxy",
    PASS,
    "--",
    *AGENT,
]


def once(workload: str, agent: list[str], quick: bool) -> dict[str, float]:
    env = dict(os.environ, ACPSTACK_BENCH_QUICK="1" if quick else "0")
    argv = [sys.executable, str(PEERS / "acpstack_client.py"), workload, "--", *agent]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.proxy_chain")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    report: dict[str, object] = {}
    for workload, keys in (("W1", ("value",)), ("W2", ("p50", "p99"))):
        runs = {
            name: [once(workload, agent, args.quick) for _ in range(args.reps)]
            for name, agent in (("direct", AGENT), ("chain", CHAIN))
        }
        for key in keys:
            figures = {
                name: statistics.median(float(r[key]) for r in got) for name, got in runs.items()
            }
            faster = workload == "W1"  # updates/s: higher is better; W2: µs, lower is better
            cost = (
                figures["direct"] / figures["chain"]
                if faster
                else figures["chain"] / figures["direct"]
            )
            label = f"{workload} {'updates/s' if faster else key + ' µs'}"
            report[label] = {**figures, "chain cost (x)": round(cost, 2)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
