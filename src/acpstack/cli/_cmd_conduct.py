"""`acpstack conduct`: run a proxy chain in front of an agent, as one agent on stdio."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from acpstack.cli._args import with_agent_command
from acpstack.cli._errors import EXIT_USAGE, CliError


class PythonProxy(str):
    """A --proxy-module value: loaded when the chain starts (so usage errors come first)."""


def add_parser(sub: Any) -> None:
    conduct = sub.add_parser(
        "conduct",
        help="run proxies in front of an agent, as one agent on stdio",
        description="A conductor (ACP proxy chains): starts each --proxy and the agent, routes "
        "every message between them, and is one ordinary agent to its client. Without an "
        "agent command it is itself a proxy (started by another conductor).",
    )
    conduct.add_argument(
        "--proxy",
        action="append",
        default=[],
        metavar="COMMAND",
        help="a proxy's command line (repeat for a chain, first = nearest the client)",
    )
    conduct.add_argument(
        "--proxy-module",
        dest="proxy",
        action="append",
        type=PythonProxy,
        metavar="FILE.py[:CLASS]",
        help="a Python proxy (a subclass of acpstack.proxy.Proxy) run inside the conductor's "
        "process, with no pipe or process of its own; in the chain where it stands among --proxy",
    )
    conduct.add_argument(
        "--legacy-names",
        action="store_true",
        help="send _proxy/initialize and _proxy/successor (both spellings are always accepted)",
    )
    conduct.add_argument(
        "--record",
        metavar="DIR",
        help="record each hop's traffic in DIR (0-proxy.jsonl ... N-agent.jsonl; acpstack "
        "inspect runs in front of every component; view one with acpstack inspect --view)",
    )
    with_agent_command(conduct, "the agent at the end of the chain (none: proxy mode)")
    conduct.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from acpstack.proxy import ChainEnded, conduct_stdio
    from acpstack.rpc import run as run_loop

    if not args.proxy and not args.agent_command:
        raise CliError("give at least one --proxy or an agent command after --", EXIT_USAGE)
    if args.record:
        args.record = os.path.abspath(args.record)
        os.makedirs(args.record, exist_ok=True)
    from acpstack.proxy import load_proxy

    try:
        proxies = [load_proxy(p) if isinstance(p, PythonProxy) else p for p in args.proxy]
    except ValueError as exc:
        raise CliError(f"--proxy-module: {exc}", EXIT_USAGE) from None
    try:
        run_loop(
            conduct_stdio(
                proxies, args.agent_command, legacy_names=args.legacy_names, record=args.record
            )
        )
    except ChainEnded as exc:
        sys.stderr.write(f"acpstack conduct: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130  # interrupted: the chain's processes are ended by their owners
    return 0
