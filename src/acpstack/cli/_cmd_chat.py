"""`acpstack chat`: its arguments, and how they become a chat (which agent, which session)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, get_args

from acpstack.cli._args import Formatter, key_value, positive_seconds, with_agent_command
from acpstack.cli._errors import EXIT_USAGE, CliError
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.cli._chat import ChatOptions
    from acpstack.cli._chat_book import SessionBook
    from acpstack.cli._config import Config
    from acpstack.cli._records import SessionRecords
    from acpstack.cli._registry import AgentLaunch

TOOL_KINDS = get_args(acp.ToolKind)
BUILT_IN = "the built-in agent (acpstack agent)"

DESCRIPTION = """\
Chat with an ACP agent: interactive at a terminal, headless with -p PROMPT (or a prompt
on stdin). The agent is a name (a profile from the config file, or an id from the ACP
registry: `acpstack agents` lists them), a command after `--`, or --url; without any,
the config's default_agent, else the built-in agent.

Exit codes: 0 success, 1 error (the agent failed or stopped, a session in use),
2 usage, 3 timeout, 4 no such session, 5 every permission request denied or cancelled,
130 interrupted (Ctrl-C); SIGTERM and SIGHUP give 128 + the signal number."""


def add_parser(sub: Any) -> None:
    chat = sub.add_parser(
        "chat",
        help="chat with an ACP agent (interactive, or headless with -p)",
        description=DESCRIPTION,
        formatter_class=Formatter,
    )
    chat.add_argument("agent", nargs="?", metavar="AGENT", help="an agent by name")
    chat.add_argument("--cwd", default=os.getcwd(), help="the session's working directory")
    chat.add_argument("-p", "--prompt", help="run one turn headless with this prompt")
    chat.add_argument(
        "-s",
        "--session-name",
        metavar="NAME",
        help="continue the session called NAME in this directory (made when new)",
    )
    chat.add_argument(
        "--session",
        metavar="ID",
        help="continue a session: a recorded one by its name or any unique prefix of the id "
        "`acpstack sessions` shows or of the agent's session id; else the agent's session ID",
    )
    _add_headless(chat)
    _add_permissions(chat)
    _add_session_setup(chat)
    chat.add_argument(
        "--url", help="a remote agent: http(s)://HOST:PORT/acp or ws(s)://HOST:PORT/acp"
    )
    chat.add_argument(
        "-v", "--verbose", action="store_true", help="log what the client does to stderr"
    )
    chat.add_argument(
        "--otel",
        action="store_true",
        help="OpenTelemetry spans for the chat's requests, their traceparent sent in _meta "
        "(the otel extra; configure the SDK and exporter with OTEL_* variables, e.g. under "
        "opentelemetry-instrument); --json shows the trace ids",
    )
    chat.add_argument(
        "--token-env",
        default="ACPSTACK_TOKEN",
        metavar="NAME",
        help="with --url: the environment variable holding the server's token",
    )
    with_agent_command(chat, "the agent's own command line, run instead of a named agent")
    chat.set_defaults(run=run)


def _add_headless(chat: argparse.ArgumentParser) -> None:
    group = chat.add_argument_group("headless output")
    group.add_argument(
        "--format",
        choices=("text", "json", "quiet"),
        default=None,
        help="text: the turn as it happens (default); json: every wire message as a JSON line, "
        "then a result record; quiet: only the final answer",
    )
    group.add_argument("--json", action="store_true", help="the same as --format json")
    group.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="headless: give up after this long (exit code 3); interactive: cancel a turn "
        "that runs longer",
    )


def _add_permissions(chat: argparse.ArgumentParser) -> None:
    group = chat.add_argument_group("permissions (rules first, then you, else rejected)")
    which = group.add_mutually_exclusive_group()
    which.add_argument("--approve-all", action="store_true", help="approve every request")
    which.add_argument("--deny-all", action="store_true", help="reject every request")
    group.add_argument(
        "--allow",
        action="append",
        default=[],
        choices=TOOL_KINDS,
        metavar="KIND",
        help=f"approve requests of this tool kind ({', '.join(TOOL_KINDS)})",
    )
    group.add_argument(
        "--permissions", metavar="FILE", help="rules from a JSON or TOML file (see the README)"
    )


def _add_session_setup(chat: argparse.ArgumentParser) -> None:
    group = chat.add_argument_group("session setup")
    group.add_argument(
        "--auth", metavar="METHOD", help="authenticate with this method id when asked"
    )
    group.add_argument("--mode", help="switch the session to this mode first")
    group.add_argument(
        "--config",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="set a session config option first (repeatable)",
    )
    group.add_argument("--mcp-config", metavar="FILE", help="MCP servers to give the agent (JSON)")
    group.add_argument("--no-fs", action="store_true", help="do not offer file reads and writes")
    group.add_argument("--no-terminal", action="store_true", help="do not offer terminals")
    group.add_argument(
        "--unstable",
        action="store_true",
        help="speak ACP's unstable methods with agents that offer them: subagents, "
        "inter-session messages, auth status, /title, /archive, /unarchive, /status",
    )


def run(args: argparse.Namespace) -> int:
    from acpstack.cli._chat import run_chat

    options = build_options(args)
    if args.otel:
        try:
            from acpstack.rpc import enable_tracing

            enable_tracing()
        except ImportError:
            raise CliError(
                '--otel needs OpenTelemetry: pip install ".[otel]"', EXIT_USAGE
            ) from None
    return run_chat(options, verbose=args.verbose)


def build_options(args: argparse.Namespace) -> ChatOptions:
    from acpstack.cli._chat import ChatOptions
    from acpstack.cli._chat_files import load_mcp_servers, load_permissions
    from acpstack.cli._config import load_config
    from acpstack.cli._paths import config_file
    from acpstack.cli._policy import build_rules

    output = "json" if args.json else args.format
    if args.json and args.format not in (None, "json"):
        raise CliError(f"--json and --format {args.format} contradict each other", EXIT_USAGE)
    headless = args.prompt is not None or not sys.stdin.isatty()
    if not headless:
        import prompt_toolkit  # noqa: F401  (the line editor: the `cli` extra, checked up front)
    if output is not None and not headless:
        raise CliError(f"--format {output} is for headless runs: give -p PROMPT", EXIT_USAGE)
    if args.session and args.session_name:
        raise CliError("give --session ID or -s NAME, not both", EXIT_USAGE)
    if args.prompt is not None and not args.prompt.strip():
        raise CliError("error: the prompt is empty: give -p a PROMPT with some text", EXIT_USAGE)
    cwd = os.path.abspath(args.cwd)
    if not os.path.isdir(cwd):
        raise CliError(f"--cwd {args.cwd}: not a directory", EXIT_USAGE)
    config = load_config(config_file())
    notices: list[str] = []
    book = _session_book(args, cwd, notices)
    opts = ChatOptions(
        cwd=cwd,
        prompt=args.prompt,
        output=output or "text",
        timeout=args.timeout,
        deny_all=args.deny_all,
        session=args.session,
        interactive=not headless,
        ask_user=not headless,
        auth_method=args.auth,
        mode=args.mode,
        config=list(args.config),
        enable_fs=not args.no_fs,
        enable_terminal=not args.no_terminal,
        notices=notices,
    )
    label = _choose_agent(args, opts, config, book)
    opts.unstable = args.unstable or (opts.launch is not None and opts.launch.unstable)
    if opts.unstable and label == BUILT_IN:
        opts.agent_command.append("--unstable")  # so that the built-in agent offers them too
    file_rules, fallback = (
        load_permissions(args.permissions, cwd) if args.permissions else ([], None)
    )
    opts.rules = build_rules(file_rules, args.permissions, list(args.allow), args.approve_all)
    if fallback == "reject":
        opts.ask_user = False
    if args.mcp_config:
        opts.mcp_servers = load_mcp_servers(args.mcp_config)
    if book is not None and not headless and book.history_file is not None:
        opts.history_file = str(book.history_file)
    opts.book = book
    return opts


def _session_book(args: argparse.Namespace, cwd: str, notices: list[str]) -> SessionBook | None:
    """The records and locks, or None (with a notice) when the state directory is unusable
    and nothing depends on it."""
    from acpstack.cli._chat_book import SessionBook
    from acpstack.cli._paths import state_dir
    from acpstack.cli._records import SessionRecord, SessionRecords

    try:
        records = SessionRecords(state_dir("sessions"))
        locks = state_dir("locks")
        history = state_dir() / "history"
    except CliError as exc:
        if args.session or args.session_name:
            raise  # a named or loaded session needs its lock
        notices.append(f"{exc.message}; this chat is not recorded and its input history not kept")
        return None
    template = SessionRecord(id="", session_id="", cwd=cwd, agent="", name=args.session_name)
    book = SessionBook(records, locks, template)
    book.history_file = history
    if args.session:
        _find_session(args, book, records, cwd)
    return book


def _find_session(
    args: argparse.Namespace, book: SessionBook, records: SessionRecords, cwd: str
) -> None:
    """`--session REF`: a recorded session (by name, or a unique prefix of its record id or
    session id) goes on with its record and its agent; any other REF is passed to the agent
    as its session id."""
    from acpstack.cli._records import AmbiguousRef

    try:
        record = records.find(args.session, cwd)
    except AmbiguousRef as exc:
        raise CliError(f"error: --session {exc}", EXIT_USAGE) from None
    if record is None:
        return
    if record.cwd != cwd:
        raise CliError(
            f"error: the session {args.session!r} belongs to {record.cwd}: "
            f"continue it there, or give --cwd {record.cwd}",
            EXIT_USAGE,
        )
    book.record = record
    args.session = record.session_id


def _choose_agent(
    args: argparse.Namespace, opts: ChatOptions, config: Config, book: SessionBook | None
) -> str:
    """Which agent: a name, a command after `--`, --url; else the named session's agent, the
    config's default, the built-in one. Returns its label."""
    from acpstack.cli._redact import Redactor

    given = [x for x in (args.agent, args.agent_command, args.url) if x]
    if len(given) > 1:
        raise CliError("give one agent: a name, a command after `--`, or --url", EXIT_USAGE)
    record = book.record if book is not None else None
    name, command, url = args.agent, args.agent_command, args.url
    if not given and record is not None:  # `-s NAME` goes on with the agent it was made with
        name, command, url = record.agent_name, record.agent_command, record.url
    elif not given:
        name = config.default_agent
    label: str
    if url:
        opts.url = url
        opts.token = os.environ.get(args.token_env) or None
        label = url
    elif name:
        opts.launch = resolve_name(name, config)
        opts.agent_command = list(opts.launch.command)
        opts.agent_env = dict(opts.launch.env)
        label = name
    elif command:
        opts.agent_command = list(command)
        label = Redactor().text(" ".join(command))
    else:
        label = BUILT_IN
    if book is not None:
        book.template.agent = label
        book.template.agent_name = name if name and not url else None
        book.template.agent_command = list(command) if command and not name and not url else None
        book.template.url = url or None
        if given and record is not None and record.agent_key != book.template.agent_key:
            raise CliError(
                f"the session {record.name or record.id!r} of this directory was made with "
                f"{record.agent}; leave out the agent to continue it, or pick another "
                + ("name" if record.name else "session"),
                EXIT_USAGE,
            )
    return label


def resolve_name(name: str, config: Config) -> AgentLaunch:
    """The launch of the agent called `name` (a profile, else a registry id)."""
    from acpstack.cli._paths import cache_dir
    from acpstack.cli._registry import RegistryError, UnknownAgent, load_registry, resolve

    try:
        cache = cache_dir()
    except CliError:
        cache = None
    loaded = load_registry(cache)
    try:
        return resolve(name, config, loaded.registry, lambda: cache_dir("agents"))
    except UnknownAgent as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    except RegistryError as exc:
        raise CliError(str(exc)) from None
