"""Runs every (client, agent) pair on every workload, alternating, and summarises medians."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PEERS = Path(__file__).resolve().parent / "peers"
WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7"]
CROSS_WORKLOADS = ["W1", "W2", "W3"]
# W7 is ours, not in BENCHMARKS.md: the agent's RSS over a long stream must stay flat.
ACPSTACK_ONLY = ["W7"]
TIMEOUT = 300

# metric -> (unit, higher is better, goal)
METRICS: dict[str, tuple[str, bool, float | None]] = {
    "W1": ("updates/s", True, 90_000),
    "W2 p50": ("µs", False, 45),
    "W2 p99": ("µs", False, 100),
    "W3": ("requests/s", True, 25_000),
    "W4": ("s", False, 0.2),
    "W5": ("ms", False, 100),
    "W6": ("MB RSS", False, 25),
    "import": ("ms", False, 50),
    "import deps": ("ms", False, None),
    "W7": ("MB growth", False, 1),
    "W8 http": ("updates/s", True, None),
    "W8 http p50": ("µs", False, None),
    "W8 ws": ("updates/s", True, None),
    "W8 ws p50": ("µs", False, None),
}


@dataclass
class Side:
    """How to start one implementation's client or agent."""

    name: str
    client: list[str]
    agent: list[str]


@dataclass
class Results:
    samples: dict[str, dict[str, list[float]]] = field(
        default_factory=dict
    )  # pair -> metric -> values
    errors: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, pair: str, metric: str, value: float) -> None:
        self.samples.setdefault(pair, {}).setdefault(metric, []).append(value)

    def median(self, pair: str, metric: str) -> float | None:
        values = self.samples.get(pair, {}).get(metric)
        return statistics.median(values) if values else None


def sides(
    ours_python: Path, floor_python: Path, pysdk_python: Path, node_peers: Path | None
) -> dict[str, Side]:
    ours, floor = str(ours_python), str(floor_python)
    out = {
        "acpstack": Side(
            "acpstack",
            [ours, str(PEERS / "acpstack_client.py")],
            [ours, str(PEERS / "acpstack_agent.py")],
        ),
        "py-sdk": Side(
            "py-sdk",
            [str(pysdk_python), str(PEERS / "pysdk_client.py")],
            [str(pysdk_python), str(PEERS / "pysdk_agent.py")],
        ),
        "floor": Side(
            "floor", [floor, str(PEERS / "floor_client.py")], [floor, str(PEERS / "floor_agent.py")]
        ),
    }
    if node_peers is not None:
        out["ts-sdk"] = Side(
            "ts-sdk",
            ["node", str(node_peers / "ts_client.mjs")],
            ["node", str(node_peers / "ts_agent.mjs")],
        )
    return out


def pairs(available: dict[str, Side], chosen: list[str]) -> list[tuple[str, Side, Side, list[str]]]:
    """(label, client side, agent side, workloads): each implementation with itself, then cross pairs."""
    out = [
        (
            name,
            side,
            side,
            WORKLOADS if name == "acpstack" else [w for w in WORKLOADS if w not in ACPSTACK_ONLY],
        )
        for name, side in available.items()
        if name in chosen
    ]
    ours = available["acpstack"]
    for other in ("py-sdk", "ts-sdk"):
        if other in available and other in chosen and "acpstack" in chosen:
            out.append(
                (f"acpstack client → {other} agent", ours, available[other], CROSS_WORKLOADS)
            )
            out.append(
                (f"{other} client → acpstack agent", available[other], ours, CROSS_WORKLOADS)
            )
    return out


def pinned(argv: list[str]) -> list[str]:
    # Client and agent share one CPU, as in BENCHMARKS.md: a pipe ping-pong is then not
    # at the mercy of cross-core wakeups, and the machine's second core stays for the noise.
    return ["taskset", "-c", "0", *argv] if shutil.which("taskset") else argv


def run_pair(client: Side, agent: Side, workload: str, env: dict[str, str]) -> dict[str, float]:
    argv = pinned([*client.client, workload, "--", *agent.agent])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"exit {done.returncode}: {tail[:200]}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def import_time_ms(python: str, module: str) -> float:
    """Wall time of `import module` in a fresh interpreter, minus the interpreter's own start
    (the fastest of 5 starts each: start-up noise only ever adds time)."""

    def wall(code: str) -> float:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([python, "-c", code], check=True)
            times.append(time.perf_counter() - t0)
        return min(times)

    return max(0.0, (wall(f"import {module}") - wall("pass")) * 1000)


def run_all(
    available: dict[str, Side],
    chosen: list[str],
    workloads: list[str],
    reps: int,
    quick: bool,
    ours_python: Path,
    pysdk_python: Path,
) -> Results:
    env = dict(os.environ, ACPSTACK_BENCH_QUICK="1" if quick else "0")
    results = Results()
    plan = pairs(available, chosen)
    for rep in range(reps):
        for workload in workloads:
            order = plan if rep % 2 == 0 else list(reversed(plan))  # alternate who goes first
            for label, client, agent, allowed in order:
                if workload not in allowed:
                    continue
                print(f"  rep {rep + 1}/{reps} {workload} {label}", file=sys.stderr, flush=True)
                try:
                    result = run_pair(client, agent, workload, env)
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                    results.errors.setdefault(label, {})[workload] = str(exc)
                    continue
                if workload == "W2":
                    results.add(label, "W2 p50", result["p50"])
                    results.add(label, "W2 p99", result["p99"])
                else:
                    results.add(label, workload, result["value"])
                    for extra in ("start", "end"):  # W7's RSS readings, kept in the JSON
                        if extra in result:
                            results.add(label, f"{workload} {extra}", result[extra])
        if "acpstack" in chosen:
            results.add("acpstack", "import", import_time_ms(str(ours_python), "acpstack.agent"))
            # What acpstack's two dependencies alone cost here: the rest of "import" is ours.
            results.add(
                "acpstack", "import deps", import_time_ms(str(ours_python), "asyncio, msgspec")
            )
        if "py-sdk" in chosen:
            results.add("py-sdk", "import", import_time_ms(str(pysdk_python), "acp"))
    return results


def fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "—"
    if metric in ("W4", "W7"):
        return f"{value:.3f}"
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def ratio(ours: float | None, theirs: float | None, higher_better: bool) -> str:
    if not ours or not theirs:
        return "—"
    r = ours / theirs if higher_better else theirs / ours
    return f"{r:.2f}×"


def table(results: Results, chosen: list[str]) -> str:
    impls = [
        i for i in ("acpstack", "py-sdk", "ts-sdk", "floor") if i in chosen and i in results.samples
    ]
    header = ["metric", "unit", *impls, "vs py-sdk", "vs ts-sdk", "vs floor", "goal", "met"]
    rows = [header]
    for metric, (unit, higher, goal) in METRICS.items():
        ours = results.median("acpstack", metric)
        row = [metric, unit, *(fmt(results.median(i, metric), metric) for i in impls)]
        row += [
            ratio(ours, results.median(o, metric), higher) for o in ("py-sdk", "ts-sdk", "floor")
        ]
        goal_text = "—" if goal is None else (f"≥ {goal:,.0f}" if higher else f"≤ {goal:g}")
        met = (
            "—"
            if ours is None or goal is None
            else ("yes" if (ours >= goal if higher else ours <= goal) else "NO")
        )
        rows += [[*row, goal_text, met]]
    cross = [label for label in results.samples if "→" in label]
    lines = _render(rows)
    if cross:
        crows = [["pair", "W1 updates/s", "W2 p50 µs", "W3 requests/s"]]
        for label in cross:
            crows.append(
                [
                    label,
                    fmt(results.median(label, "W1"), "W1"),
                    fmt(results.median(label, "W2 p50"), "W2"),
                    fmt(results.median(label, "W3"), "W3"),
                ]
            )
        lines += "\n\nCross pairs (interop under load; which side costs the time):\n" + _render(
            crows
        )
    if results.errors:
        lines += "\n\nErrors:\n" + "\n".join(
            f"  {label} {w}: {e}" for label, errs in results.errors.items() for w, e in errs.items()
        )
    return lines


def _render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        out.append(
            "  ".join(
                cell.rjust(w) if i > 1 or n == 0 and i > 1 else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
