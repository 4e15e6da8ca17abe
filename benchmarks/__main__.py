"""`python -m benchmarks`: the workloads of BENCHMARKS.md and their scaling variants for
acpstack, the official Python and TypeScript SDKs and the floor; W1 and W2 for acpstack over
protocol v2 (acpstack-v2); W8 (remote) for acpstack and the TypeScript SDK. Workload ids are listed in benchmarks/README.md."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
from pathlib import Path

from benchmarks import _remote, _report, _runner, _setup
from benchmarks._workloads import IMPLS, NOT_RUN, ONLY, WORKLOADS


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--reps",
        type=int,
        default=5,
        help="repetitions (medians are reported; this machine drifts between reps)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller workloads (most 10x), for a smoke run"
    )
    parser.add_argument(
        "--only",
        default=",".join([*WORKLOADS, "W8"]),
        help=f"workloads, any of {','.join(WORKLOADS)},W8 (W8: remote)",
    )
    parser.add_argument(
        "--impl",
        default=",".join(IMPLS),
        help="implementations to run (also: acp-layer, the Python SDK's peers on acpstack's"
        " `acp` layer)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON results file (default: benchmarks/results/DATE-HOST.json)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the Python interpreter the Python peers run on (venvs are made from it)",
    )
    parser.add_argument(
        "--build",
        choices=("pure", "mypyc"),
        default="pure",
        help="acpstack as installed by default (pure Python) or compiled with mypyc",
    )
    args = parser.parse_args()
    args.only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in args.only if w not in [*WORKLOADS, "W8"]]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; known: {', '.join(WORKLOADS)}, W8")
    return args


def heading(versions: dict[str, str], build: dict[str, object], args: argparse.Namespace) -> str:
    compiled = build["compiled"]
    what = str(build["build"])
    if isinstance(compiled, list) and compiled:
        what += f" ({len(compiled)} compiled modules)"
    sdks = [
        f"{name} {versions[key]}"
        for name, key in (
            ("py-sdk", "agent-client-protocol"),
            ("ts-sdk", "@agentclientprotocol/sdk"),
        )
        if key in versions
    ]
    node = f" on node {versions['node']}" if "node" in versions else ""
    mode = "quick, " if args.quick else ""
    return (
        f"acpstack {versions['acpstack']} build: {what}; Python {versions['python']}; "
        f"{', '.join(sdks)}{node}; {mode}{args.reps} reps, medians"
    )


def main() -> int:
    args = parse_args()
    ours_python = _setup.acpstack_python(args.python, args.build)
    pysdk_python = _setup.python_sdk(args.python)
    floor_python = _setup.floor_python(args.python)
    node_peers = _setup.node_sdk()
    layer_python = _setup.acp_layer_python(args.python) if "acp-layer" in args.impl else None
    available = _runner.sides(ours_python, floor_python, pysdk_python, node_peers, layer_python)
    chosen = [i for i in args.impl.split(",") if i in available]
    workloads = [w for w in WORKLOADS if w in args.only]
    versions = _setup.versions(ours_python, pysdk_python, node_peers)
    build = _setup.acpstack_build(ours_python)
    print(f"versions: {versions}; acpstack build: {build}", file=sys.stderr)
    results = (
        _runner.run_all(
            available, chosen, workloads, args.reps, args.quick, ours_python, pysdk_python
        )
        if workloads
        else _runner.Results()
    )
    if "W8" in args.only:
        _remote.run_w8(ours_python, node_peers, chosen, args.reps, args.quick, results)

    tables = [
        _report.table(results, chosen, workloads) if workloads else "",
        _remote.table(results),
    ]
    text = "\n\n".join([heading(versions, build, args), *(t for t in tables if t)])
    print(text)
    summary = _report.summary(results)
    stamp = datetime.datetime.now(datetime.UTC)
    out = (
        args.out
        or Path(__file__).resolve().parent / "results" / f"{stamp:%Y-%m-%d}-{platform.node()}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": stamp.isoformat(timespec="seconds"),
                "host": platform.node(),
                "cpus": os.cpu_count(),
                "pinned": "taskset -c 0" if shutil.which("taskset") else None,
                "reps": args.reps,
                "quick": args.quick,
                "versions": versions,
                "acpstack_build": build,
                "workloads": workloads + (["W8"] if "W8" in args.only else []),
                "goals": _report.goals(summary),
                "summary": summary,
                "medians": {
                    pair: {m: statistics.median(v) for m, v in ms.items()}
                    for pair, ms in results.samples.items()
                },
                "samples": results.samples,
                "errors": results.errors,
                "not_run": {w: {"impls": sorted(i), "why": why} for w, (i, why) in NOT_RUN.items()},
                "only": {i: {"workloads": w, "why": why} for i, (w, why) in ONLY.items()},
                "table": text,
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    print(f"\nresults written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
