"""`acpstack check agent`: run the conformance cases against an agent;
`acpstack check client`: an agent that exercises the client that runs it."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpstack.cli._args import with_agent_command

if TYPE_CHECKING:
    from acpstack.conformance import AgentTarget, CheckOptions


def add_parser(sub: Any) -> None:
    check = sub.add_parser("check", help="check an ACP agent (or client) for conformance")
    kinds = check.add_subparsers(dest="check_kind", required=True)
    agent = kinds.add_parser(
        "agent",
        help="run the conformance cases against an agent: acpstack check agent -- AGENT ...",
    )
    with_agent_command(agent, "the agent's command line (or --url)")
    output = agent.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("--list", action="store_true", help="list the cases and exit")
    agent.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE")
    agent.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="IDS",
        help="run only these cases: ids, id prefixes ending in '.', or group names (comma "
        "separated, repeatable)",
    )
    agent.add_argument(
        "--unstable", action="store_true", help="check against the unstable schema too"
    )
    agent.add_argument(
        "--proxy",
        action="store_true",
        help="the command is a proxy-chain component: run the proxy cases (implies --unstable "
        "and, without --only, --only proxy)",
    )
    _add_connection_options(agent)
    client = kinds.add_parser(
        "client",
        help="an agent that exercises the client running it (register it in your editor)",
    )
    client.add_argument(
        "--report",
        metavar="FILE",
        help="where to write the report (default: a file in the temp directory, named in "
        "the agent's message); .json for JSON, anything else Markdown",
    )


def _add_connection_options(agent: Any) -> None:
    """How `check agent` reaches, waits for and drives the agent."""
    agent.add_argument("--url", help="a remote agent (http(s)://.../acp or ws(s)://.../acp)")
    agent.add_argument(
        "--token-env",
        default="ACPSTACK_TOKEN",
        metavar="NAME",
        help="with --url: the environment variable holding the server's token",
    )
    agent.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long to wait for each answer (default 20)",
    )
    agent.add_argument(
        "--startup-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a new agent process may take to answer its first request "
        "(default 60; the start-up measured is reported)",
    )
    agent.add_argument(
        "--user-state",
        action="store_true",
        help="run the agent with your own data directories (by default it gets temporary "
        "XDG_DATA_HOME, XDG_STATE_HOME, XDG_CACHE_HOME and ACPSTACK_STORE, so the check's "
        "sessions stay out of your store)",
    )
    agent.add_argument(
        "--eof-grace",
        type=float,
        metavar="SECONDS",
        help="how long the agent may take to exit after stdin closes (default 5)",
    )
    agent.add_argument("--prompt", help="the prompt of ordinary turns")
    agent.add_argument(
        "--cancel-prompt",
        help="a prompt that keeps the agent busy long enough to be cancelled",
    )
    agent.add_argument(
        "--auth",
        metavar="METHOD_ID",
        help="call authenticate (auth/login on v2) with this method after initialize",
    )


def run_check(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    if args.check_kind == "client":
        return _check_client(args.report)
    return _check_agent(args, agent_command)


def _check_client(report: str | None) -> int:
    from acpstack.conformance import ClientCheckAgent, serve_client_check
    from acpstack.transports import StdioError

    agent = ClientCheckAgent(report_path=Path(report).resolve() if report else None)
    try:
        asyncio.run(serve_client_check(agent))
    except StdioError as exc:
        sys.stderr.write(f"acpstack check client: cannot serve ACP on stdio: {exc}\n")
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _check_agent(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    from acpstack.conformance import AgentTarget, CheckOptions, all_cases, select_cases

    only = tuple(part for item in args.only for part in item.split(","))
    if args.proxy:
        args.unstable, only = True, only or ("proxy",)
    if args.list:
        for case in select_cases(all_cases(), only, unstable=True):
            flag = " (--unstable)" if case.unstable else ""
            level = case.rule.level.value
            sys.stdout.write(f"{case.id:<30} {level:<10} {case.title}{flag}\n")
        return 0
    error = _usage_error(args, agent_command, only)
    if error:
        sys.stderr.write(f"acpstack check agent: {error}\n")
        return 2
    if args.url:
        target = AgentTarget(url=args.url, token=os.environ.get(args.token_env) or None)
    else:
        assert agent_command is not None
        target = AgentTarget(command=tuple(agent_command))
    given = {
        "timeout": args.timeout,
        "prompt": args.prompt,
        "cancel_prompt": args.cancel_prompt,
        "eof_grace": args.eof_grace,
        "startup_timeout": args.startup_timeout,
    }
    options = CheckOptions(
        unstable=args.unstable,
        only=only,
        auth_method=args.auth,
        user_state=args.user_state,
        proxy=args.proxy,
        **{name: value for name, value in given.items() if value is not None},
    )
    return asyncio.run(_run(target, options, args))


def _usage_error(args: argparse.Namespace, command: list[str] | None, only: tuple[str, ...]) -> str:
    from acpstack.conformance import unknown_selectors

    if args.url and command:
        return "give either --url or an agent command after --, not both"
    if not args.url and not command:
        return "name the agent to check: acpstack check agent -- AGENT COMMAND ..."
    limits = (args.timeout, args.eof_grace, args.startup_timeout)
    if any(value is not None and value <= 0 for value in limits):
        return "--timeout, --startup-timeout and --eof-grace must be positive"
    unknown = unknown_selectors(only)
    if unknown:
        return f"no case matches {', '.join(unknown)} (see --list)"
    return ""


async def _run(target: AgentTarget, options: CheckOptions, args: argparse.Namespace) -> int:
    from acpstack.conformance import (
        MessageValidator,
        SchemaUnavailable,
        TargetUnavailable,
        all_cases,
        check_agent,
        header,
        render_json,
        render_junit,
        render_tail,
        result_line,
    )

    width = max(len(c.id) for c in all_cases())
    columns = _terminal_columns()
    progress = None if args.json else (lambda r: _say(result_line(r, width, columns)))
    try:
        MessageValidator(unstable=options.unstable)  # fails early without the `check` extra
    except SchemaUnavailable as exc:
        sys.stderr.write(f"acpstack check agent: {exc}\n")
        return 2
    if not args.json:
        _say(f"acpstack check agent: {target.describe()}\n")
    try:
        report = await check_agent(target, options, on_result=progress)
    except (TargetUnavailable, SchemaUnavailable) as exc:
        sys.stderr.write(f"acpstack check agent: {exc}\n")
        return 2
    if args.junit:
        Path(args.junit).write_text(render_junit(report), "utf-8")
    if args.json:
        sys.stdout.write(render_json(report))
        return report.exit_code
    _say("")
    sys.stdout.write(render_tail(report, min(columns or 100, 100)))
    _say(header(report).replace("acpstack check agent: ", "checked: "))
    return report.exit_code


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _terminal_columns() -> int | None:
    """The terminal's width to wrap the report at; None on a pipe (one line per case)."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns
