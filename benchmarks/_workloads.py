"""The workloads, the metrics they yield, and the goals of ../shared/BENCHMARKS.md.

Sizes live in peers/_common.py (and again in the .mjs peers); the ids here are what
`--only` takes and what every client accepts as its first argument.
"""

from __future__ import annotations

from dataclasses import dataclass

WORKLOADS = [
    "W1",
    "W1-64B",
    "W1-1K",
    "W1-64K",
    "W2",
    "W3",
    "W4",
    "S1",
    "S100",
    "S1000",
    "BIG-UPDATE",
    "BIG-READ",
    "W5",
    "W6",
    "W7",
]
CROSS_WORKLOADS = ["W1", "W2", "W3"]
# Workloads some implementations do not run, and why (printed under the table, kept in the JSON).
NOT_RUN: dict[str, tuple[set[str], str]] = {
    "W7": (
        {"py-sdk", "ts-sdk", "floor"},
        "acpstack only: a check of our own (agent RSS must stay flat over a long stream), "
        "not a BENCHMARKS.md workload",
    ),
}


# Implementations that run only some workloads: impl -> (workloads, why).
ONLY: dict[str, tuple[list[str], str]] = {
    "acpstack-v2": (
        ["W1", "W2"],
        "acpstack over protocol v2 (the draft), beside acpstack over v1: a turn ends at the "
        "idle state update that follows the prompt's acknowledgement",
    ),
}


def runs(impl: str, workload: str) -> bool:
    if impl in ONLY:
        return workload in ONLY[impl][0]
    return impl not in NOT_RUN.get(workload, (set(), ""))[0]


# Characters of text in each update of the W1 family (peers/_common.py STREAMS), for MiB/s.
STREAM_SIZES = {"W1": 40, "W1-64B": 64, "W1-1K": 1024, "W1-64K": 64 * 1024}
# The clients report every wall time of the W4 family in seconds; S1's is a millisecond or
# two, so the S workloads are shown in milliseconds.
TO_MS = {"S1", "S100", "S1000"}
IMPLS = ("acpstack", "py-sdk", "ts-sdk", "floor", "acpstack-v2")
# The metrics compared between acpstack over protocol v1 and over v2.
V2_METRICS = ("W1", "W2 p50", "W2 p99")
SDKS = ("py-sdk", "ts-sdk")


@dataclass(frozen=True)
class Metric:
    """One row of the table. Goals: `floor_goal` is a fraction of the floor's performance
    in the same run (acpstack ÷ floor, or floor ÷ acpstack when lower is better),
    `sdk_goal` a multiple of the best official SDK's, `goal` an absolute bound."""

    name: str
    unit: str
    higher_better: bool
    floor_goal: float | None = None
    sdk_goal: float | None = None
    goal: float | None = None
    title: str | None = None  # the metric's name in BENCHMARKS.md, where it differs


def _sessions(n: int) -> list[Metric]:
    return [Metric(f"S{n}", "ms", False), Metric(f"S{n} rate", "updates/s", True)]


def _big(kind: str) -> list[Metric]:
    return [
        Metric(f"BIG-{kind}", "ms", False),
        Metric(f"BIG-{kind} client peak", "MB", False),
        Metric(f"BIG-{kind} agent peak", "MB", False),
    ]


METRICS = [
    Metric("W1", "updates/s", True, floor_goal=0.70, sdk_goal=5),
    Metric("W1-64B", "updates/s", True),
    Metric("W1-1K", "updates/s", True),
    Metric("W1-64K", "updates/s", True, floor_goal=0.70, title="W1 with 64 KiB updates"),
    Metric("W1-64K MiB/s", "MiB/s", True),
    Metric("W2 p50", "µs", False, floor_goal=0.50, sdk_goal=5),
    Metric("W2 p99", "µs", False),
    Metric("W3", "requests/s", True, floor_goal=0.50, sdk_goal=5),
    Metric("W4", "s", False, floor_goal=0.70, sdk_goal=5),
    *_sessions(1),
    *_sessions(100),
    *_sessions(1000),
    *_big("UPDATE"),
    *_big("READ"),
    Metric("W5", "ms", False, floor_goal=0.60),
    Metric("W6", "MB RSS", False, floor_goal=0.80),
    Metric("import", "ms", False, goal=50),
    Metric("import deps", "ms", False),
    Metric("W7", "MB growth", False, goal=1),
]
