"""`python -m benchmarks.import_layers`: where the import time of acpstack goes, per layer.

Runs a fresh interpreter `--runs` times with `-X importtime`, importing `--module` (default
`acpstack.agent`, what an agent program imports), and adds up the modules' own ("self")
import time per group: each acpstack layer (schema, wire, transports, rpc, agent, ...), its
dependencies (msgspec, uvloop) and the standard library packages that cost the most
(asyncio, ssl, typing, logging, re). A module of none of these counts for the nearest one
that imported it (so "asyncio" includes inspect, socket, subprocess... that asyncio loaded),
or for the interpreter's start when a bare `python -c pass` imports it too. Medians over the
runs (the machine is noisy; the minimum is shown too), in milliseconds, plus the wall time
of the import itself, and (`--modules`) which modules each group loaded.

By default it measures acpstack as users install it (benchmarks/.venv-acpstack-3.X, made by
`python -m benchmarks`); `--python` picks another interpreter, e.g. `.venv/bin/python`.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from collections import defaultdict

from benchmarks import _setup

# Standard library packages named on their own; any other module counts for the nearest
# named module that imported it (inspect for asyncio, uuid for msgspec, ...), or for the
# interpreter's own start when `python -c pass` imports it too.
STDLIB_GROUPS = ("asyncio", "ssl", "typing", "logging", "re")
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def named(module: str) -> str | None:
    """The group a module is named in, or None (it counts for its importer)."""
    parts = module.split(".")
    if parts[0] == "acpstack":
        return "acpstack" if len(parts) == 1 else f"acpstack.{parts[1].lstrip('_')}"
    if parts[0] in ("msgspec", "uvloop"):
        return parts[0]
    name = parts[0].lstrip("_")
    return name if name in STDLIB_GROUPS else None


def importtime(python: str, code: str) -> list[tuple[int, str, float, float]]:
    """(depth, module, self ms, cumulative ms) of each import, in -X importtime's order
    (a module after the modules it imported)."""
    err = subprocess.run(
        [python, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    ).stderr
    return [
        (len(indent), name, int(own) / 1000, int(cumulative) / 1000)
        for own, cumulative, indent, name in LINE.findall(err)
    ]


def one_run(
    python: str, module: str, startup: set[str]
) -> tuple[dict[str, float], dict[str, set[str]], float]:
    """Self time per group (ms), the modules of each group, and the total (ms)."""
    times: dict[str, float] = defaultdict(float)
    modules: dict[str, set[str]] = defaultdict(set)
    total = 0.0
    owners: list[tuple[int, str | None]] = []  # (depth, group) of the importers above
    for depth, name, own, cumulative in reversed(importtime(python, f"import {module}")):
        while owners and owners[-1][0] >= depth:
            owners.pop()
        owner = named(name) or (owners[-1][1] if owners else None)
        if owner is None:
            owner = "interpreter start" if name in startup else "other stdlib"
        owners.append((depth, owner))
        times[owner] += own
        modules[owner].add(name)
        if depth == 1 and name not in startup:
            total += cumulative
    return times, modules, total


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.import_layers", description=__doc__)
    parser.add_argument("--module", default="acpstack.agent", help="what to import")
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters to run")
    parser.add_argument("--python", default=None, help="interpreter (default: the bench venv)")
    parser.add_argument("--modules", action="store_true", help="list each group's modules")
    args = parser.parse_args()
    python = args.python or str(_setup.acpstack_python(sys.executable))
    startup = {name for _, name, _, _ in importtime(python, "pass")}
    runs = [one_run(python, args.module, startup) for _ in range(args.runs)]
    groups = sorted({g for times, _, _ in runs for g in times})
    rows = []
    for name in groups:
        values = [times.get(name, 0.0) for times, _, _ in runs]
        rows.append((statistics.median(values), min(values), name))
    rows.sort(reverse=True)
    totals = [total for _, _, total in runs]
    print(f"import {args.module} with {python}: {args.runs} runs, self time per group, ms")
    print(f"{'group':<22} {'median':>7} {'min':>7}  modules")
    for median, low, name in rows:
        loaded = sorted(set().union(*(mods.get(name, set()) for _, mods, _ in runs)))
        shown = ", ".join(loaded) if args.modules else f"{len(loaded)}"
        print(f"{name:<22} {median:7.2f} {low:7.2f}  {shown}")
    print(f"{'import (wall)':<22} {statistics.median(totals):7.2f} {min(totals):7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
