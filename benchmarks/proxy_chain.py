"""`python -m benchmarks.proxy_chain`: W1 and W2 through a proxy chain against direct.

acpstack's benchmark client and agent (peers/acpstack_*.py), three ways, alternating: directly;
through `acpstack conduct` with two pass-through proxies (peers/pass_proxy.py), which adds
three processes and three process hops each way; and through an in-process chain (the
client runs `acpstack.proxy.Conductor` with two pass-through `Proxy` instances in its own
process: the same process hops as direct). Prints one JSON object: each workload's figures
each way and each chain's ratio to direct as a cost (above 1: the chain is slower). `--quick` runs the
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


def once(workload: str, agent: list[str], quick: bool, in_process: int = 0) -> dict[str, float]:
    env = dict(os.environ, ACPSTACK_BENCH_QUICK="1" if quick else "0")
    env["ACPSTACK_BENCH_CHAIN_IN_PROCESS"] = str(in_process)
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
    # name: (agent argv, proxies the client runs in its own process)
    ways = {"direct": (AGENT, 0), "chain": (CHAIN, 0), "in-process chain": (AGENT, 2)}
    for workload, keys in (("W1", ("value",)), ("W2", ("p50", "p99"))):
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in ways}  # alternating
        for _ in range(args.reps):
            for name, (agent, in_process) in ways.items():
                runs[name].append(once(workload, agent, args.quick, in_process))
        for key in keys:
            figures = {
                name: statistics.median(float(r[key]) for r in got) for name, got in runs.items()
            }
            faster = workload == "W1"  # updates/s: higher is better; W2: µs, lower is better
            costs = {
                f"{name} cost (x)": round(
                    figures["direct"] / figures[name]
                    if faster
                    else figures[name] / figures["direct"],
                    2,
                )
                for name in ways
                if name != "direct"
            }
            label = f"{workload} {'updates/s' if faster else key + ' µs'}"
            report[label] = {**figures, **costs}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
