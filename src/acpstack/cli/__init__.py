"""The `acpstack` command: chat with any agent, run the reference agent, the demo."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

USAGE = """acpstack chat [--url URL [--token-env NAME]] [--cwd DIR] [-p PROMPT] [--json] [--approve-all | --deny-all | --allow KIND ...] [--session ID] [-- AGENT COMMAND ...]
       acpstack sessions [--cwd DIR] [-- AGENT COMMAND ...]
       acpstack agent [--model NAME] [--base-url URL] [--api-key-env NAME] [--context-window TOKENS] [--images] [--unstable] [--store PATH]
       acpstack serve [--host H] [--port P] [--token-env NAME | --token T] [--allow-origin O ...] [-- AGENT COMMAND ...]
       acpstack demo [--yes]
       acpstack check agent [--json | --junit FILE] [--only IDS] [--unstable] [--url URL] [-- AGENT COMMAND ...]
       acpstack check client [--report FILE]
       acpstack inspect [--record FILE] [--web [PORT]] -- AGENT COMMAND ...
       acpstack replay FILE [--json] -- AGENT COMMAND ..."""


def _split_agent(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1 :] or None
    return argv, None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    args_list, agent_command = _split_agent(list(sys.argv[1:] if argv is None else argv))
    parser = argparse.ArgumentParser(
        prog="acpstack", usage=USAGE, description="The Agent Client Protocol stack: tools."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser("chat", help="chat with an ACP agent (default: the built-in one)")
    chat.add_argument("--cwd", default=os.getcwd(), help="the session's working directory")
    chat.add_argument("-p", "--prompt", help="run one turn headless and print the final message")
    chat.add_argument(
        "--json",
        action="store_true",
        help="print every wire message as a JSON line (direction, message)",
    )
    chat.add_argument(
        "--approve-all", action="store_true", help="headless: approve every permission request"
    )
    chat.add_argument(
        "--deny-all", action="store_true", help="headless: reject every permission request"
    )
    chat.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="KIND",
        help="headless: approve requests of this tool kind",
    )
    chat.add_argument(
        "--session", help="load (or resume) this session instead of starting a new one"
    )
    chat.add_argument(
        "--url", help="a remote agent: http(s)://HOST:PORT/acp or ws(s)://HOST:PORT/acp"
    )
    chat.add_argument(
        "--token-env",
        default="ACPSTACK_TOKEN",
        metavar="NAME",
        help="with --url: the environment variable holding the server's token",
    )

    sessions = sub.add_parser("sessions", help="list an agent's sessions")
    sessions.add_argument("--cwd", default=None)

    agent = sub.add_parser("agent", help="run the reference agent on stdio (for editors)")
    agent.add_argument(
        "--model",
        default=os.environ.get("ACPSTACK_MODEL"),
        help="model name (OpenAI-compatible API); none = offline scripted agent",
    )
    agent.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="API base URL (OpenAI, Ollama, vLLM, llama.cpp server)",
    )
    agent.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key"
    )
    agent.add_argument(
        "--context-window",
        type=_positive_int,
        default=32_768,
        metavar="TOKENS",
        help="the model's context window; older messages are left out of requests to fit (default 32768)",
    )
    agent.add_argument(
        "--images",
        action="store_true",
        help="the model accepts images (advertised to the client, sent as image parts)",
    )
    agent.add_argument(
        "--unstable", action="store_true", help="also offer ACP's unstable methods (session/fork)"
    )
    agent.add_argument(
        "--store", default=None, help="SQLite file for sessions (default: user data directory)"
    )

    from acpstack.cli._serve import add_parser as add_serve_parser

    add_serve_parser(sub)
    _add_tool_parsers(sub)

    demo = sub.add_parser(
        "demo", help="watch the client and the built-in agent work on a sample project"
    )
    demo.add_argument(
        "--yes", action="store_true", help="approve the demo's permission requests without asking"
    )

    args = parser.parse_args(args_list)
    if args.command == "agent":
        from acpstack.cli._refagent import run_reference_agent

        return run_reference_agent(
            model=args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            store_path=args.store,
            context_window=args.context_window,
            images=args.images,
            unstable=args.unstable,
        )
    if args.command == "serve":
        from acpstack.cli._serve import run_serve

        return run_serve(args, agent_command)
    if args.command in TOOL_COMMANDS:
        return _run_tool(args, agent_command)
    if args.command == "demo":
        from acpstack.cli._demo import run_demo

        return run_demo(assume_yes=args.yes)
    if args.command == "sessions":
        from acpstack.cli._chat import default_agent_command, list_sessions

        return asyncio.run(list_sessions(agent_command or default_agent_command(), args.cwd))
    from acpstack.cli._chat import ChatOptions, default_agent_command, run_chat

    if args.url and agent_command:
        parser.error("give either --url or an agent command after --, not both")
    if args.approve_all and args.deny_all:
        parser.error("--approve-all and --deny-all exclude each other")
    headless = args.prompt is not None or not sys.stdin.isatty()
    opts = ChatOptions(
        agent_command=agent_command or default_agent_command(),
        cwd=args.cwd,
        prompt=args.prompt,
        json_output=args.json,
        approve_all=args.approve_all,
        deny_all=args.deny_all,
        allow_kinds=list(args.allow),
        session=args.session,
        url=args.url,
        token=os.environ.get(args.token_env) or None if args.url else None,
        interactive=not headless,
        ask_user=not headless,
    )
    return run_chat(opts)


TOOL_COMMANDS = ("check", "inspect", "replay")


def _add_tool_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from acpstack.cli._check import add_parser as add_check_parser
    from acpstack.cli._inspect import add_parsers as add_inspect_parsers

    add_check_parser(sub)
    add_inspect_parsers(sub)


def _run_tool(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    if args.command == "check":
        from acpstack.cli._check import run_check

        return run_check(args, agent_command)
    from acpstack.cli._inspect import run_inspect, run_replay

    if args.command == "inspect":
        return run_inspect(args, agent_command)
    return run_replay(args, agent_command)
