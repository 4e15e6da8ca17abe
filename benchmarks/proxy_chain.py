"""`python -m benchmarks.proxy_chain`: W1 and W2 through a proxy chain against direct.

acpstack's benchmark client and agent (peers/acpstack_*.py): directly; through `acpstack
conduct` with no proxy (`conductor alone`: the floor of any chain a conductor process runs);
with two pass-through proxies (peers/pass_proxy.py) run as processes (`chain`: three pipe
hops each way instead of one); and with the same two proxies run inside the conductor's
process (`in-process`, `--proxy-module`: two pipe hops each way). Prints one JSON object:
each workload's figures and the ratio of each setup to direct as a cost (above 1: slower).
`--quick` runs the smaller workloads; `--reps N` takes the median of N runs (default 1).
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
CONDUCT = [sys.executable, "-m", "acpstack", "conduct"]
CHAIN = [*CONDUCT, "--proxy", PASS, "--proxy", PASS, "--", *AGENT]
PASS_MODULE = str(PEERS / "pass_proxy.py")
IN_PROCESS = [*CONDUCT, "--proxy-module", PASS_MODULE, "--proxy-module", PASS_MODULE, "--", *AGENT]
ALONE = [*CONDUCT, "--", *AGENT]  # the conductor with no proxy: what its own process costs
SETUPS = (
    ("direct", AGENT),
    ("conductor alone", ALONE),
    ("chain", CHAIN),
    ("in-process", IN_PROCESS),
)


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
            for name, agent in SETUPS
        }
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
                for name, _ in SETUPS[1:]
            }
            label = f"{workload} {'updates/s' if faster else key + ' µs'}"
            report[label] = {**figures, **costs}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
