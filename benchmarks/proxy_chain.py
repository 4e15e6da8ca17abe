"""`python -m benchmarks.proxy_chain`: W1 and W2 through a proxy chain against direct.

acpstack's benchmark client and agent (peers/acpstack_*.py), every process pinned to CPU 0
as in BENCHMARKS.md (unpinned, a round trip between two processes has two speeds, about
30 and about 100 µs here, depending on whether they share a core, and the ratios follow
that rather than the chain): directly; through a process that only copies bytes
(peers/byte_relay.py, `byte relay`: the floor of any process in between, conductor or
not); through `acpstack conduct` with no proxy
(`conductor alone`: the floor of any chain a conductor process runs); with two
pass-through proxies (peers/pass_proxy.py) run as processes (`chain`: three pipe hops each
way instead of one); the same two inside the conductor's process (`in-process`,
`--proxy-module`: the conductor routes past a proxy what it has no hook for, so these cost
no hop); the example proxies `rules.py` and `audit.py` the same way (`in-process
rules+audit`: hooks that work on every prompt and every update); and the two pass-through
proxies and the conductor in the benchmark client's own process (`client-hosted`: what a
Python host running `acpstack.proxy.Conductor` itself gets; one pipe hop each way, as
direct). The setups alternate repetition by repetition. Prints one JSON object: each
workload's figures and the ratio of each setup to direct as a cost (above 1: slower).
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

from benchmarks._runner import pinned

PEERS = Path(__file__).resolve().parent / "peers"
AGENT = [sys.executable, str(PEERS / "acpstack_agent.py")]
PASS = f"{sys.executable} {PEERS / 'pass_proxy.py'}"
CONDUCT = [sys.executable, "-m", "acpstack", "conduct"]
CHAIN = [*CONDUCT, "--proxy", PASS, "--proxy", PASS, "--", *AGENT]
PASS_MODULE = str(PEERS / "pass_proxy.py")
IN_PROCESS = [*CONDUCT, "--proxy-module", PASS_MODULE, "--proxy-module", PASS_MODULE, "--", *AGENT]
ALONE = [*CONDUCT, "--", *AGENT]  # the conductor with no proxy: what its own process costs
RELAY = [sys.executable, str(PEERS / "byte_relay.py"), *AGENT]  # a process that parses nothing
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "proxies"
# The two example proxies in the conductor's process: a prompt hook and an update hook (every
# update goes through the audit proxy; the W1/W2 turns have no tool call for it to write).
HOOKS = [*CONDUCT, "--proxy-module", str(EXAMPLES / "rules.py")]
HOOKS += ["--proxy-module", str(EXAMPLES / "audit.py"), "--", *AGENT]
# name, the agent's command line, proxies the benchmark client runs in its own process
SETUPS = (
    ("direct", AGENT, 0),
    ("byte relay", RELAY, 0),
    ("conductor alone", ALONE, 0),
    ("chain", CHAIN, 0),
    ("in-process", IN_PROCESS, 0),
    ("client-hosted", AGENT, 2),
    ("in-process rules+audit", HOOKS, 0),
)


def once(workload: str, agent: list[str], quick: bool, hosted: int = 0) -> dict[str, float]:
    env = dict(os.environ, ACPSTACK_BENCH_QUICK="1" if quick else "0")
    env["ACPSTACK_BENCH_CHAIN_IN_PROCESS"] = str(hosted)
    argv = pinned([sys.executable, str(PEERS / "acpstack_client.py"), workload, "--", *agent])
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
        runs: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in SETUPS}
        for _ in range(args.reps):
            for name, agent, hosted in SETUPS:
                runs[name].append(once(workload, agent, args.quick, hosted))
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
                for name, _, _ in SETUPS[1:]
            }
            label = f"{workload} {'updates/s' if faster else key + ' µs'}"
            report[label] = {**figures, **costs}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
