"""Failover: three `acpstack serve` behind HAProxy on one PostgreSQL, one killed with SIGKILL.

`python -m benchmarks.failover [--sessions 1000] [--profile http|http-streams|ws|both|all] [--runs 5]`
runs tools/cluster/_failover.py (the same run as tests/remote/test_failover.py, at any
size): every session streams TURNS turns of CHUNKS chunks through HAProxy; server 0
(`node1`) is killed once `--kill-at` of the turns are done. Prints one JSON object per run
(sessions lost, turns lost against those in flight on the killed server, and where they
were lost with their data.reason, acknowledged turns delivered twice or incomplete, the
failover times, the failover's own requests timed, per-server counts, chunks/s and store
events/s), with `--account` the run's account in words, then a table per profile over the
runs. `--drivers N` runs the clients in N processes (one process driving every HTTP
connection is itself what a failover waits on most). Needs PostgreSQL and HAProxy
(Debian's packages); everything runs on 127.0.0.1. Diagnoses, by environment variable:
ACPSTACK_HAPROXY_LOG=1 (HAProxy's timers per request), ACPSTACK_PROFILE_DRIVER=FILE
(cProfile of the clients' processes), ACPSTACK_NODE_ASYNCIO_DEBUG=1 (the servers' slow
event-loop steps, in the JSON's `slow_steps`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from tools.cluster._failover import run_failover

COLUMNS = (
    ("verdict", "verdict"),
    ("sessions lost", "sessions_lost"),
    ("turns lost / in flight on the killed server", "lost"),
    ("lost elsewhere", "lost_elsewhere"),
    ("delivered twice", "duplicates"),
    ("incomplete", "incomplete"),
    ("servers down", "servers_marked_down"),
    ("failover median / slowest (s)", "failover"),
    ("each session back, median / slowest (s)", "session_failover"),
    ("SIGKILL to sessions back, median / slowest (s)", "since_kill"),
    ("resume requests: median / slowest (s)", "resume"),
    ("chunks/s", "chunks_per_s"),
)


def cell(run: dict[str, Any], key: str) -> str:
    if key == "verdict":
        return "pass" if run["problems"] == 0 else f"FAIL ({run['problems']} problems)"
    if key == "lost":
        return f"{run['lost']} / {run['in_flight_on_killed']}"
    if key == "failover":
        return f"{run['failover_median_s']:.2f} / {run['failover_max_s']:.2f}"
    if key == "session_failover":
        return f"{run['session_failover_median_s']:.2f} / {run['session_failover_max_s']:.2f}"
    if key == "since_kill":
        return f"{run['since_kill_median_s']:.2f} / {run['since_kill_max_s']:.2f}"
    if key == "resume":
        count, median, slowest = run["asks"].get("session/resume", [0, 0.0, 0.0])
        return f"{median:.2f} / {slowest:.2f} ({count})"
    return str(run[key])


def table(profile: str, runs: list[dict[str, Any]]) -> str:
    lines = [
        f"{profile}: {len(runs)} run(s), {sum(r['problems'] == 0 for r in runs)} passed",
        "| run | " + " | ".join(title for title, _ in COLUMNS) + " |",
        "| --- " * (len(COLUMNS) + 1) + "|",
    ]
    for index, run in enumerate(runs, 1):
        lines.append(f"| {index} | " + " | ".join(cell(run, key) for _, key in COLUMNS) + " |")
    medians = [r["failover_median_s"] for r in runs]
    slowest = [r["failover_max_s"] for r in runs]
    per_session = [r["session_failover_median_s"] for r in runs]
    lines.append(
        f"failover (a connection's sessions all back) median over the runs' medians "
        f"{statistics.median(medians):.2f} s, slowest of all {max(slowest):.2f} s; "
        f"each session back: median over the runs' medians "
        f"{statistics.median(per_session):.2f} s, slowest of all "
        f"{max(r['session_failover_max_s'] for r in runs):.2f} s"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.failover", description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--per-connection", type=int, default=10)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--chunk-delay", type=float, default=0.005, help="seconds between chunks")
    parser.add_argument("--kill-at", type=float, default=0.4)
    parser.add_argument(
        "--profile",
        choices=["http", "http-streams", "ws", "both", "all"],
        default="both",
        help="both: http and ws; all: the three (http: the client as it comes, every "
        "message on the connection's one event stream; http-streams: a stream per session)",
    )
    parser.add_argument("--runs", "--reps", type=int, default=1, help="runs of each profile")
    parser.add_argument(
        "--drivers",
        type=int,
        default=1,
        help="processes the clients run in (1: one Python process drives every connection, "
        "and over HTTP its own event loop is what a failover waits on most)",
    )
    parser.add_argument("--account", action="store_true", help="print each run's account")
    args = parser.parse_args()
    profiles = {"both": ["http", "ws"], "all": ["http", "http-streams", "ws"]}.get(
        args.profile, [args.profile]
    )
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in profiles}
    for _ in range(args.runs):
        for profile in profiles:
            account = run_failover(
                sessions=args.sessions,
                per_connection=args.per_connection,
                turns=args.turns,
                chunks=args.chunks,
                chunk_delay=args.chunk_delay,
                kill_at=args.kill_at,
                profile=profile,
                drivers=args.drivers,
            )
            summary = account.summary()
            summary["problem_lines"] = account.problems[:10]
            results[profile].append(summary)
            print(json.dumps(summary), flush=True)
            if args.account:
                print(account.text(), file=sys.stderr, flush=True)
    for profile, runs in results.items():
        print(table(profile, runs), flush=True)
    return 0 if all(r["problems"] == 0 for runs in results.values() for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
