"""`acpstack sessions`: the sessions `acpstack chat` recorded (list, show, history, delete,
export), and `sessions agent`, the agent's own list (session/list)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from acpstack.cli._args import Formatter, positive_int, with_agent_command
from acpstack.cli._errors import EXIT_ERROR, EXIT_NO_SESSION, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from acpstack.cli._records import SessionRecord, SessionRecords

DESCRIPTION = """\
The sessions `acpstack chat` recorded: one per session it drove, with its directory, its
agent, its name (chat -s NAME) and its turns, the last used first. A session is named by
its NAME (in the directory given by --cwd), or by any unique prefix of its record id or of
the agent's session id (`chat --session` takes the same).

A directory keeps its 30 most recently used unnamed sessions (each `chat -p` run without
-s makes one); `sessions prune` forgets others by age or all unnamed ones.

`sessions agent` asks an agent for its own list of sessions instead."""


def add_parser(sub: Any) -> None:
    sessions = sub.add_parser(
        "sessions",
        help="list, show, export or delete recorded sessions (default: list)",
        description=DESCRIPTION,
        formatter_class=Formatter,
    )
    _listing_options(sessions)
    actions = sessions.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser(
        "list", help="the recorded sessions of a directory, last used first (default)"
    )
    _listing_options(listing)
    prune = actions.add_parser(
        "prune",
        help="forget old or unnamed sessions (says which; --dry-run to only look)",
        description="Forget the records of sessions last used before --older-than AGE, "
        "or without a name (--unnamed), or both (then: unnamed and older), in the "
        "directory given by --cwd (--all: every directory). One line per record says "
        "what goes; a session open in a chat is kept. The agents keep their own copies.",
    )
    prune.add_argument(
        "--older-than",
        type=age,
        metavar="AGE",
        help="sessions last used longer ago than AGE (e.g. 30d, 12h, 45m, 2w)",
    )
    prune.add_argument("--unnamed", action="store_true", help="sessions without a NAME")
    prune.add_argument("--all", action="store_true", help="of every directory")
    prune.add_argument("-n", "--dry-run", action="store_true", help="say what would go, keep it")
    _common(prune, formats=())
    prune.set_defaults(run=_prune)
    show = actions.add_parser("show", help="one session's record")
    _target(show, formats=("text", "json"))
    show.set_defaults(run=_show)
    history = actions.add_parser(
        "history", help="one session's turns, a line per message (whole) or tool call"
    )
    _target(history, formats=("text", "json"))
    history.add_argument(
        "--limit", type=positive_int, default=20, help="the last N turns (default 20)"
    )
    history.set_defaults(run=_history)
    delete = actions.add_parser("delete", help="forget a session (the agent keeps its own copy)")
    _target(delete, formats=())
    delete.set_defaults(run=_delete)
    export = actions.add_parser("export", help="a session's record and turns, as JSON or Markdown")
    _target(export, formats=("json", "markdown"))
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.set_defaults(run=_export)
    agent = actions.add_parser("agent", help="ask an agent for its own sessions (session/list)")
    agent.add_argument("agent", nargs="?", metavar="AGENT", help="an agent by name")
    agent.add_argument("--cwd", default=None, help="only the sessions of this directory")
    with_agent_command(agent, "the agent's own command line")
    agent.set_defaults(run=_agent_list)


def _listing_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="of every directory")
    parser.add_argument(
        "--limit", type=positive_int, default=None, help="the N most recently used (default: all)"
    )
    _common(parser, formats=("text", "json", "quiet"))
    parser.set_defaults(run=_list)


def age(text: str) -> timedelta:
    """`30d`, `12h`, `45m`, `2w` as a time span (for argparse)."""
    match = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an age: a number and a unit, m (minutes), h, d or w (e.g. 30d)"
        )
    unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
    return timedelta(**{unit: int(match.group(1))})


def _common(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument("--cwd", default=os.getcwd(), help="the directory names are looked up in")
    if formats:
        parser.add_argument("--format", choices=formats, default=formats[0], help="output format")


def _target(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument(
        "session",
        metavar="SESSION",
        help="a NAME, or a unique prefix of a record id or a session id",
    )
    _common(parser, formats)


def _records() -> SessionRecords:
    from acpstack.cli._paths import state_dir
    from acpstack.cli._records import SessionRecords

    return SessionRecords(state_dir("sessions"))


def _find(args: argparse.Namespace) -> tuple[SessionRecords, SessionRecord]:
    from acpstack.cli._records import AmbiguousRef

    records = _records()
    try:
        record = records.find(args.session, os.path.abspath(args.cwd))
    except AmbiguousRef as exc:
        raise CliError(f"error: {exc}", EXIT_USAGE) from None
    if record is None:
        raise CliError(
            f"no recorded session {args.session!r} (in {os.path.abspath(args.cwd)}); "
            "`acpstack sessions list --all` lists them",
            EXIT_NO_SESSION,
        )
    return records, record


def _emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def _list(args: argparse.Namespace) -> int:
    cwd = os.path.abspath(args.cwd)
    records = [r for r in _records().all() if args.all or r.cwd == cwd]
    shown = records[: args.limit] if args.limit else records
    if args.format == "json":
        _emit(json.dumps([asdict(r) for r in shown], ensure_ascii=False, indent=1))
    elif args.format == "quiet":
        _emit("".join(f"{r.name or r.id}\n" for r in shown))
    elif not records:
        where = "" if args.all else f" in {cwd} (--all for every directory)"
        sys.stderr.write(f"no recorded sessions{where}\n")
    else:
        from acpstack.cli._sessions_table import print_sessions

        print_sessions(shown, with_directory=args.all)
        if len(shown) < len(records):
            sys.stderr.write(
                f"({len(records) - len(shown)} more; `--limit` shows more, "
                "`acpstack sessions prune` forgets old ones)\n"
            )
    return 0


def _prune(args: argparse.Namespace) -> int:
    from acpstack.cli._lock import is_locked
    from acpstack.cli._paths import state_dir
    from acpstack.cli._records import parse_time

    if args.older_than is None and not args.unnamed:
        raise CliError("error: say what to prune: --older-than AGE, --unnamed, or both", EXIT_USAGE)
    cwd = os.path.abspath(args.cwd)
    records = _records()
    cutoff = datetime.now(UTC) - args.older_than if args.older_than else None
    chosen = []
    for record in records.all():
        if not args.all and record.cwd != cwd:
            continue
        if args.unnamed and record.name is not None:
            continue
        used = parse_time(record.updated_at)
        if cutoff is not None and (used is None or used >= cutoff):
            continue
        chosen.append(record)
    verb = "would forget" if args.dry_run else "forgot"
    kept_open = 0
    for record in chosen:
        if is_locked(state_dir("locks"), record.lock_key):
            kept_open += 1
            _emit(f"kept (open in a chat): {_one_line(record)}")
            continue
        if not args.dry_run:
            records.delete(record)
        _emit(f"{verb}: {_one_line(record)}")
    where = "" if args.all else f" of {cwd}"
    gone = len(chosen) - kept_open
    sys.stderr.write(
        f"{verb} {gone} recorded session{'s' if gone != 1 else ''}{where}"
        + (" (--dry-run: nothing was removed)" if args.dry_run else "")
        + "; the agents keep their own copies\n"
    )
    return 0


def _one_line(record: SessionRecord) -> str:
    name = f" {record.name!r}" if record.name else ""
    turns = f"{record.turns} turn{'' if record.turns == 1 else 's'}"
    return f"{record.id}{name} last used {record.updated_at}, {turns}, {record.cwd}"


def _show(args: argparse.Namespace) -> int:
    _, record = _find(args)
    data = asdict(record)
    data.pop("agent_command", None)  # may hold credentials: shown redacted as `agent`
    if args.format == "json":
        _emit(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        _emit("".join(f"{key}: {'' if value is None else value}\n" for key, value in data.items()))
    return 0


def _turns(entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    turns: list[list[dict[str, Any]]] = []
    for entry in entries:
        if entry.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(entry)
    return turns


def _history(args: argparse.Namespace) -> int:
    records, record = _find(args)
    turns = _turns(records.history(record))[-args.limit :]
    if args.format == "json":
        _emit(
            json.dumps(
                {"id": record.id, "sessionId": record.session_id, "turns": turns},
                ensure_ascii=False,
                indent=1,
            )
        )
        return 0
    for turn in turns:
        for entry in turn:
            _emit(_history_line(entry))
    return 0


def _history_line(entry: dict[str, Any]) -> str:
    """One line per entry, its text whole (a line break shown as ⏎)."""
    role = entry.get("role")
    text = str(entry.get("text", "")).replace("\n", " ⏎ ")
    if role == "tool":
        return f"{entry.get('at', '')}\ttool\t{text} ({entry.get('status', '')})"
    if role == "result":
        outcome = entry.get("error") or entry.get("stopReason") or ""
        return f"{entry.get('at', '')}\tresult\t{outcome}"
    return f"{entry.get('at', '')}\t{role}\t{text}"


def _delete(args: argparse.Namespace) -> int:
    from acpstack.cli._lock import is_locked
    from acpstack.cli._paths import state_dir

    records, record = _find(args)
    if is_locked(state_dir("locks"), record.lock_key):
        raise CliError(
            f"session {args.session!r} is open in a chat; leave that chat first", EXIT_ERROR
        )
    records.delete(record)
    sys.stderr.write(
        f"deleted the record of {record.name or record.id} (session {record.session_id})\n"
    )
    return 0


def _export(args: argparse.Namespace) -> int:
    records, record = _find(args)
    entries = records.history(record)
    data = asdict(record)
    data.pop("agent_command", None)
    if args.format == "json":
        text = json.dumps({"record": data, "history": entries}, ensure_ascii=False, indent=1) + "\n"
    else:
        text = _markdown(record, entries)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as exc:
            raise CliError(
                f"cannot write {args.output}: {exc.strerror or exc}", EXIT_ERROR
            ) from None
    else:
        _emit(text)
    return 0


def _markdown(record: SessionRecord, entries: list[dict[str, Any]]) -> str:
    lines = [
        f"# {record.title or record.name or 'Session ' + record.session_id}",
        "",
        f"- agent: {record.agent}",
        f"- directory: {record.cwd}",
        f"- session: {record.session_id}",
        f"- created: {record.created_at}, updated: {record.updated_at}",
    ]
    for entry in entries:
        role, text = entry.get("role"), str(entry.get("text", ""))
        if role == "user":
            lines += ["", "## You", "", text]
        elif role == "agent":
            lines += ["", "## Agent", "", text]
        elif role == "tool":
            lines += ["", f"- tool: {text} ({entry.get('status', '')})"]
        elif role == "result" and entry.get("error"):
            lines += ["", f"*The turn failed: {entry['error']}*"]
    return "\n".join(lines) + "\n"


def _agent_list(args: argparse.Namespace) -> int:
    import asyncio

    from acpstack.cli._sessions_agent import list_agent_sessions

    if args.agent and args.agent_command:
        raise CliError("give one agent: a name or a command after `--`", EXIT_USAGE)
    return asyncio.run(list_agent_sessions(args.agent, args.agent_command, args.cwd))
