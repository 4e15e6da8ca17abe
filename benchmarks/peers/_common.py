"""Sizes shared by every Python benchmark peer (the .mjs peers repeat them), and helpers."""

from __future__ import annotations

import os

QUICK = os.environ.get("ACPSTACK_BENCH_QUICK") == "1"
N_STREAM = 2_000 if QUICK else 20_000
N_ROUND_TRIPS = 200 if QUICK else 2_000
N_READS = 500 if QUICK else 5_000
N_SESSIONS_W4 = 200
N_UPDATES_W4 = 100
N_SESSIONS_W6 = 1_000 if QUICK else 10_000
N_LONG_STREAM = 50_000 if QUICK else 500_000  # W7


def percentiles(samples: list[float]) -> dict[str, object]:
    ordered = sorted(samples)
    return {
        "p50": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")
