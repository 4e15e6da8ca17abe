"""`python -m benchmarks`: W1-W7 for acpstack, the official Python and TypeScript SDKs and the floor; W8 (remote) for acpstack and the TypeScript SDK."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path

from benchmarks import _remote, _runner, _setup


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--reps",
        type=int,
        default=5,
        help="repetitions (medians are reported; this machine drifts between reps)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="10x smaller workloads, for a smoke run"
    )
    parser.add_argument(
        "--only",
        default=",".join([*_runner.WORKLOADS, "W8"]),
        help="workloads, e.g. W1,W2 (W8: remote)",
    )
    parser.add_argument(
        "--impl", default="acpstack,py-sdk,ts-sdk,floor", help="implementations to run"
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
    args = parser.parse_args()

    ours_python = _setup.acpstack_python(args.python)
    pysdk_python = _setup.python_sdk(args.python)
    floor_python = _setup.floor_python(args.python)
    node_peers = _setup.node_sdk()
    available = _runner.sides(ours_python, floor_python, pysdk_python, node_peers)
    chosen = [i for i in args.impl.split(",") if i in available]
    workloads = [w for w in args.only.split(",") if w in _runner.WORKLOADS]
    versions = _setup.versions(ours_python, pysdk_python, node_peers)
    print(f"versions: {versions}", file=sys.stderr)
    results = (
        _runner.run_all(
            available, chosen, workloads, args.reps, args.quick, ours_python, pysdk_python
        )
        if workloads
        else _runner.Results()
    )
    if "W8" in args.only.split(","):
        _remote.run_w8(ours_python, node_peers, chosen, args.reps, args.quick, results)

    text = "\n\n".join(
        t
        for t in (_runner.table(results, chosen) if workloads else "", _remote.table(results))
        if t
    )
    print(text)
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
                "pinned": "taskset -c 0" if _runner.shutil.which("taskset") else None,
                "reps": args.reps,
                "quick": args.quick,
                "versions": versions,
                "medians": {
                    pair: {m: _runner.statistics.median(v) for m, v in ms.items()}
                    for pair, ms in results.samples.items()
                },
                "samples": results.samples,
                "errors": results.errors,
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
