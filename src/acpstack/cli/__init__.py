"""The `acpstack` command: chat with any agent, run the reference agent, the demo.

Each subcommand lives in its own module with an `add_parser(subparsers)` function that
adds its parser and sets `run` (a function of the parsed arguments returning the exit
code). Adding a subcommand is one import and one entry in `SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from acpstack.cli import (
    _cmd_agent,
    _cmd_agents,
    _cmd_chat,
    _cmd_conduct,
    _cmd_demo,
    _cmd_sessions,
    _serve,
)
from acpstack.cli._args import VersionAction, split_agent_command
from acpstack.cli._errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    missing_extra,
)


def _add_tool_parsers(sub: Any) -> None:
    """`check`, `inspect` and `replay` (their modules add the parsers; here they get their
    `run` and may take an agent command after `--`)."""
    from acpstack.cli._check import add_parser as add_check_parser
    from acpstack.cli._check import run_check
    from acpstack.cli._inspect import add_parsers as add_inspect_parsers
    from acpstack.cli._inspect import run_inspect, run_replay

    add_check_parser(sub)
    add_inspect_parsers(sub)
    for name, run in (("check", run_check), ("inspect", run_inspect), ("replay", run_replay)):
        sub.choices[name].set_defaults(
            run=lambda args, run=run: run(args, args.agent_command), takes_agent_command=True
        )


SUBCOMMANDS: list[Callable[[Any], None]] = [
    _cmd_chat.add_parser,
    _cmd_sessions.add_parser,
    _cmd_agents.add_parser,
    _cmd_agent.add_parser,
    _cmd_conduct.add_parser,
    _serve.add_parser,
    _add_tool_parsers,
    _cmd_demo.add_parser,
]


def build_parser() -> argparse.ArgumentParser:
    """The `acpstack` argument parser, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="acpstack",
        description="The Agent Client Protocol stack: chat with any ACP agent, run one, serve one.",
        epilog="`acpstack COMMAND --help` tells more about each command.",
    )
    parser.add_argument("--version", action=VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `acpstack` with `argv` (default: the process's arguments; an agent command may
    follow `--`); the exit code. A command's error, or an extra that is not installed,
    is one line on stderr. When the reader of stdout goes away (`| head`), the command
    ends quietly, as other command-line tools do."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here rather than at the interpreter's exit
        return code
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_BROKEN_PIPE


def _drop_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for the closed pipe is dropped
    instead of failing again (with a traceback) when the interpreter flushes it at exit."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return  # not a real file (a test's capture): nothing to flush at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _main(argv: list[str] | None) -> int:
    args_list, agent_command = split_agent_command(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(args_list)
    if agent_command is not None and not getattr(args, "takes_agent_command", False):
        parser.error(f"`acpstack {args.command}` takes no agent command after `--`")
    args.agent_command = agent_command
    try:
        code: int = args.run(args)
        return code
    except CliError as exc:
        sys.stderr.write(f"acpstack {args.command}: {exc.message}\n")
        return exc.exit_code
    except ModuleNotFoundError as exc:
        problem = missing_extra(exc)
        if problem is None:
            raise
        sys.stderr.write(f"acpstack {args.command}: {problem.message}\n")
        return problem.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


__all__ = ["EXIT_USAGE", "build_parser", "main"]
