"""python -m tools.fuzz [--target agent|client|both] [--inputs N] [--seed S] [-- AGENT COMMAND ...]"""

from __future__ import annotations

import argparse
import sys

from tools.fuzz._run import run


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    agent_command: list[str] | None = None
    if "--" in args_list:
        index = args_list.index("--")
        args_list, agent_command = args_list[:index], args_list[index + 1 :] or None
    parser = argparse.ArgumentParser(
        prog="python -m tools.fuzz", description="Fuzz an ACP agent or client over real pipes."
    )
    parser.add_argument("--target", choices=["agent", "client", "both"], default="both")
    parser.add_argument(
        "--inputs", type=int, default=10_000, help="fuzzed inputs per target (default 10,000)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--hang-seconds", type=float, default=10.0, help="how long a request may go unanswered"
    )
    args = parser.parse_args(args_list)
    targets = ["agent", "client"] if args.target == "both" else [args.target]
    failed = False
    for target in targets:
        report = run(
            target,
            args.inputs,
            args.seed,
            agent_command=agent_command if target == "agent" else None,
            hang_seconds=args.hang_seconds,
        )
        print(report.summary(), flush=True)
        failed = failed or not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
