"""python -m tools.fuzz [--target agent|client|both] [--inputs N] [--seed S]
[--internal-errors FILE] [-- AGENT COMMAND ...]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
    parser.add_argument(
        "--internal-errors",
        metavar="FILE",
        help="write every -32603 answer (the input line, the logged traceback) grouped by cause"
        " to FILE (FILE.agent / FILE.client with --target both)",
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
            internal_errors=_record_path(args.internal_errors, target, len(targets)),
        )
        print(report.summary(), flush=True)
        failed = failed or not report.ok
    return 1 if failed else 0


def _record_path(option: str | None, target: str, targets: int) -> Path | None:
    if option is None:
        return None
    return Path(option) if targets == 1 else Path(f"{option}.{target}")


if __name__ == "__main__":
    sys.exit(main())
