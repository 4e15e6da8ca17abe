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

from benchmarks._workloads import CROSS_WORKLOADS, STREAM_SIZES, TO_MS, WORKLOADS, runs

PEERS = Path(__file__).resolve().parent / "peers"
TIMEOUT = 300


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
    ours_python: Path,
    floor_python: Path,
    pysdk_python: Path,
    node_peers: Path | None,
    layer_python: Path | None = None,
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
        "acpstack-v2": Side(
            "acpstack-v2",
            [ours, str(PEERS / "acpstack_client_v2.py")],
            [ours, str(PEERS / "acpstack_agent_v2.py")],
        ),
    }
    if layer_python is not None:
        # The official SDK's peers, unchanged, on acpstack's `acp` layer (compat/).
        out["acp-layer"] = Side(
            "acp-layer",
            [str(layer_python), str(PEERS / "pysdk_client.py")],
            [str(layer_python), str(PEERS / "pysdk_agent.py")],
        )
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
        (name, side, side, [w for w in WORKLOADS if runs(name, w)])
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
        raise RuntimeError(f"exit {done.returncode}: {failure_line(done.stderr)[:200]}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def failure_line(stderr: str) -> str:
    """The line of a failed peer's stderr that says what went wrong: the last one, past
    Node's stack frames and version line."""
    lines = [line.strip() for line in stderr.splitlines()]
    said = [line for line in lines if line and not line.startswith(("at ", "Node.js v"))]
    return said[-1] if said else "no output"


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


def record(results: Results, label: str, workload: str, result: dict[str, float]) -> None:
    """A client's JSON: "value" is the workload's own metric, any other key K (W2's p50,
    S*'s rate, BIG-*'s peaks, W7's RSS readings) the metric "WORKLOAD K"."""
    for key, value in result.items():
        if key == "value":
            results.add(label, workload, value * 1000 if workload in TO_MS else value)
        else:
            results.add(label, f"{workload} {key}", value)
    if workload in STREAM_SIZES:
        results.add(label, f"{workload} MiB/s", result["value"] * STREAM_SIZES[workload] / 2**20)


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
                record(results, label, workload, result)
        if "acpstack" in chosen:
            results.add("acpstack", "import", import_time_ms(str(ours_python), "acpstack.agent"))
            # What acpstack's two dependencies alone cost here: the rest of "import" is ours.
            results.add(
                "acpstack", "import deps", import_time_ms(str(ours_python), "asyncio, msgspec")
            )
        if "py-sdk" in chosen:
            results.add("py-sdk", "import", import_time_ms(str(pysdk_python), "acp"))
    return results
