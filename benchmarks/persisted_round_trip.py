"""W10, a prompt round trip on the path real agents run: `python -m benchmarks.persisted_round_trip
[--reps 3] [--quick] [--no-sdk]`.

W2 (2,000 sequential prompts, each answered at once; p50 and p99 µs at the client) with
the agent written on `SessionAgent` for each store (memory, SQLite, PostgreSQL), beside the
raw `Agent` and the agents of the official Python and TypeScript SDKs (nothing stored), all
driven by acpstack's client over real pipes, client and agent pinned to CPU 0, in one run,
alternating the agents repetition by repetition. A `SessionAgent` records each prompt in
its store before the turn ends (`Session.record_prompt`, then `flush` before the answer),
so with a store on a writer thread every round trip waits for one commit: W9
(`benchmarks.persisted`) streams and amortises commits over batches; this shows the cost
a conversational turn pays.

A module of its own rather than a mode of `benchmarks.persisted`: the metric (latency
percentiles, lower is better) and the agents (the TypeScript SDK's too) differ, and W9's
output and JSON stay comparable with earlier runs. The stores and the client are W9's.

Prints medians of p50 and of p99, each one's ratio to the raw `Agent`'s and the best
official SDK's p50 over each one's, the load average around each sample, and writes the
JSON to `benchmarks/results/`. PostgreSQL and the TypeScript SDK are left out, with a
note, where they cannot run (no PostgreSQL installed; no `node`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from benchmarks._setup import acpstack_python, node_sdk, python_sdk
from benchmarks.persisted import HERE, PEERS, measure, postgres_url

RAW = "Agent (raw, not stored)"
PY_SDK = "official Python SDK agent (not stored)"
TS_SDK = "TypeScript SDK agent (not stored)"
SDKS = (PY_SDK, TS_SDK)
Sample = dict[str, float]  # p50 and p99 (µs) of one run, and the load average around it


def agents(ours: str, tmp: str, pg: str | None, with_sdks: bool) -> dict[str, list[str]]:
    """Each agent's command line, in the order they run in a repetition."""
    session_agent = [ours, str(PEERS / "acpstack_session_agent.py")]
    out = {
        RAW: [ours, str(PEERS / "acpstack_agent.py")],
        "SessionAgent + memory": [*session_agent, "memory"],
        "SessionAgent + SQLite": [*session_agent, f"{tmp}/w10.sqlite3"],
    }
    if pg is not None:
        out["SessionAgent + PostgreSQL"] = [*session_agent, pg]
    if with_sdks:
        out[PY_SDK] = [str(python_sdk(sys.executable)), str(PEERS / "pysdk_agent.py")]
        ts_peers = node_sdk()
        if ts_peers is None:
            print("note: no node on PATH; the TypeScript SDK's row is left out", file=sys.stderr)
        else:
            out[TS_SDK] = ["node", str(ts_peers / "ts_agent.mjs")]
    return out


def table(found: dict[str, Sample]) -> list[str]:
    raw = found[RAW]
    sdk_p50 = [found[name]["p50"] for name in SDKS if name in found]
    best_sdk = min(sdk_p50) if sdk_p50 else None
    lines = [
        "| agent | p50 µs | p99 µs | p50 ÷ raw Agent's | p99 ÷ raw Agent's | best SDK p50 ÷ this |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, m in found.items():
        vs_sdk = f"{best_sdk / m['p50']:.2f}" if best_sdk is not None else "-"
        lines.append(
            f"| {name} | {m['p50']:.1f} | {m['p99']:.1f} | {m['p50'] / raw['p50']:.2f} "
            f"| {m['p99'] / raw['p99']:.2f} | {vs_sdk} |"
        )
    return lines


def collect(
    commands: dict[str, list[str]], client: list[str], reps: int, env: dict[str, str]
) -> dict[str, list[Sample]]:
    """W2 from `client` against each agent of `commands`, `reps` times, alternating them."""
    samples: dict[str, list[Sample]] = {}
    for rep in range(reps):
        for name, agent in commands.items():
            load_before = os.getloadavg()[0]
            result = measure(client, agent, env, "W2")
            sample = {
                "p50": float(result["p50"]),
                "p99": float(result["p99"]),
                "load": max(load_before, os.getloadavg()[0]),
            }
            samples.setdefault(name, []).append(sample)
            print(
                f"rep {rep + 1} {name}: p50 {sample['p50']:.1f} µs, p99 "
                f"{sample['p99']:.1f} µs (load {sample['load']:.1f})",
                file=sys.stderr,
            )
    return samples


def medians(samples: dict[str, list[Sample]]) -> dict[str, Sample]:
    return {
        name: {key: statistics.median(s[key] for s in values) for key in ("p50", "p99")}
        for name, values in samples.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.persisted_round_trip")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 round trips instead of 2,000")
    parser.add_argument("--no-sdk", action="store_true", help="leave the official SDKs out")
    args = parser.parse_args()
    env = {**os.environ, "ACPSTACK_BENCH_QUICK": "1" if args.quick else "0"}
    ours = str(acpstack_python(sys.executable))
    client = [ours, str(PEERS / "acpstack_client.py")]
    with tempfile.TemporaryDirectory() as tmp, postgres_url("w10") as pg:
        samples = collect(agents(ours, tmp, pg, not args.no_sdk), client, args.reps, env)
    loads = [s["load"] for values in samples.values() for s in values]
    size = "200" if args.quick else "2,000"
    print(f"\nW10: {size} prompt round trips, medians of {args.reps}", end="")
    print(f" (1-minute load average {min(loads):.1f}-{max(loads):.1f})\n")
    print("\n".join(table(medians(samples))))
    out = HERE / "results" / f"w10-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"samples": samples, "medians": medians(samples)}, indent=2))
    print(f"\n(written to {out.relative_to(HERE.parent)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
