"""Failover: three `acpstack serve` behind HAProxy on one PostgreSQL, one killed with SIGKILL.

`python -m benchmarks.failover [--sessions 1000] [--profile http|ws|both] [--reps 1]`
runs tools/cluster/_failover.py (the same run as tests/remote/test_failover.py, at any
size): every session streams TURNS turns of CHUNKS chunks through HAProxy; server 0 is
killed once `--kill-at` of the turns are done. Prints one JSON object per run: turns
acknowledged, lost (in flight on the killed server), completed after a failover, the
slowest failover, chunks/s at the clients, events/s written to the store. Needs
PostgreSQL and HAProxy (Debian's packages); everything runs on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json

from tools.cluster._failover import run_failover


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.failover", description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--per-connection", type=int, default=10)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--chunk-delay", type=float, default=0.005, help="seconds between chunks")
    parser.add_argument("--kill-at", type=float, default=0.4)
    parser.add_argument("--profile", choices=["http", "ws", "both"], default="both")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    profiles = ["http", "ws"] if args.profile == "both" else [args.profile]
    for _ in range(args.reps):
        for profile in profiles:
            result = run_failover(
                sessions=args.sessions,
                per_connection=args.per_connection,
                turns=args.turns,
                chunks=args.chunks,
                chunk_delay=args.chunk_delay,
                kill_at=args.kill_at,
                profile=profile,
            )
            shown = {k: v for k, v in result.items() if not k.endswith("tail")}
            print(json.dumps(shown), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
