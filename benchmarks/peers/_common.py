"""Sizes shared by every Python benchmark peer (the .mjs peers repeat them), and helpers."""

from __future__ import annotations

import os

QUICK = os.environ.get("ACPSTACK_BENCH_QUICK") == "1"
N_STREAM = 2_000 if QUICK else 20_000
N_STREAM_64K = 500 if QUICK else 5_000  # 64 KiB updates: 320 MiB in all
N_ROUND_TRIPS = 200 if QUICK else 2_000
N_READS = 500 if QUICK else 5_000
N_SESSIONS_W6 = 1_000 if QUICK else 10_000
N_LONG_STREAM = 50_000 if QUICK else 500_000  # W7
N_UPDATES_PER_SESSION = 10 if QUICK else 100  # S1, S100, S1000 (W4 keeps its 100)
BIG = 10 * 1024 * 1024  # BIG-UPDATE's one update, BIG-READ's one file

# W1 and its payload sizes: workload -> (updates, characters of text in each, all ASCII).
# Each text is an 8-digit index (order is checked) padded with "x" to its size.
STREAMS: dict[str, tuple[int, int]] = {
    "W1": (N_STREAM, 40),
    "W1-64B": (N_STREAM, 64),
    "W1-1K": (N_STREAM, 1024),
    "W1-64K": (N_STREAM_64K, 64 * 1024),
}
# W4 and its generalisation: workload -> (sessions prompting at once, updates each).
CONCURRENT: dict[str, tuple[int, int]] = {
    "W4": (200, 100),
    "S1": (1, N_UPDATES_PER_SESSION),
    "S100": (100, N_UPDATES_PER_SESSION),
    "S1000": (1_000, N_UPDATES_PER_SESSION),
}

# Before the timed part every client sends this through the same two processes, on a
# session of its own, so a JIT (Node's V8) has compiled its hot paths: one stream, prompts
# answered at once and reverse requests. Not before W5, W6 and W7, which measure a cold
# start and memory. Measured on the TypeScript pair: W2 p50 138 µs cold, 65 after 300 round
# trips, 47 after 1,000, 40 after 3,000.
WARM_STREAM, WARM_ROUND_TRIPS, WARM_READS = (2_000, 300, 300) if QUICK else (10_000, 3_000, 3_000)
COLD = ("W5", "W6", "W7")


def file_text(size: int) -> str:
    """BIG-READ's file: `size` characters in lines of 64 (so the JSON has escapes to write)."""
    line = "x" * 63 + "\n"
    return (line * (size // len(line) + 1))[:size]


def percentiles(samples: list[float]) -> dict[str, object]:
    ordered = sorted(samples)
    return {
        "p50": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def status_mb(pid: int | str, field: str = "VmRSS") -> float:
    """A size line of /proc/PID/status in MB: VmRSS (resident now) or VmHWM (peak)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


def rss_mb(pid: int) -> float:
    return status_mb(pid, "VmRSS")
