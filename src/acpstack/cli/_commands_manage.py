"""The slash commands that manage the agent's sessions: `/sessions [--all]`, `/load`, and
on agents that offer them (unstable ACP, `--unstable`) `/title`, `/archive`, `/unarchive`
and `/status`. Each checks that the agent offers what it needs before sending anything."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.text import Text

from acpstack.cli._commands_base import CommandError, require, say

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat


async def sessions(chat: Chat, args: list[str]) -> None:
    if args not in ([], ["--all"]):
        raise CommandError("usage: /sessions [--all]")
    archived = None
    if args:
        require(chat, "session/archive", "archived sessions")
        archived = "include"
    found = await chat.runtime.list_sessions(cwd=os.path.abspath(chat.opts.cwd), archived=archived)
    if not found:
        say(chat, "the agent has no sessions for this directory")
    for info in found:
        title = info.title if isinstance(info.title, str) else ""
        updated = info.updated_at if isinstance(info.updated_at, str) else ""
        current = "*" if info.session_id == chat.session_id else " "
        line = Text(f"{current} {info.session_id}  {updated}  {title}".rstrip())
        if getattr(info, "archived", None) is True:
            line.append("  (archived)", style="dim")
        say(chat, line)


async def load(chat: Chat, args: list[str]) -> None:
    if len(args) != 1:
        raise CommandError("usage: /load SESSION_ID (/sessions lists them)")
    say(chat, Text(f"loading session {args[0]}", style="dim"))
    await chat.load_session(args[0], switched=True)


async def title(chat: Chat, args: list[str]) -> None:
    require(chat, "session/set_title", "session titles")
    if not args:
        raise CommandError("usage: /title TEXT")
    assert chat.session_id is not None and chat.renderer is not None
    stored = await chat.runtime.set_title(chat.session_id, " ".join(args))
    chat.renderer.show_title(chat.session_id, stored)  # unless the agent's update showed it


async def archive(chat: Chat, args: list[str]) -> None:
    require(chat, "session/archive", "archiving sessions")
    session_id = _one_session(chat, args, "/archive [ID]")
    await chat.runtime.archive_session(session_id)
    if session_id != chat.session_id:
        say(chat, Text(f"archived session {session_id}", style="dim"))
        return
    say(chat, Text(f"archived session {session_id}; starting a new one", style="dim"))
    try:
        await chat.new_session(switched=True)
    except Exception:
        # Keep the chat usable: the old id stays current (the agent will refuse it) until
        # /new or /load succeeds.
        chat.runtime.register_session(session_id, os.path.abspath(chat.opts.cwd))
        raise
    say(chat, Text(f"new session {chat.session_id}", style="dim"))


async def unarchive(chat: Chat, args: list[str]) -> None:
    require(chat, "session/unarchive", "archiving sessions")
    session_id = _one_session(chat, args, "/unarchive [ID]")
    await chat.runtime.unarchive_session(session_id)
    hint = "" if session_id == chat.session_id else f" (/load {session_id} continues it)"
    say(chat, Text(f"unarchived session {session_id}{hint}", style="dim"))


async def status(chat: Chat, args: list[str]) -> None:
    require(chat, "session/status", "session status")
    session_id = _one_session(chat, args, "/status [ID]")
    state = await chat.runtime.session_status(session_id)
    about = {"open": "open (in the agent's memory)", "saved": "saved (not loaded)"}[state]
    say(chat, f"session {session_id}: {about}")
    if chat.runtime.auth_state is not None:
        say(chat, f"auth: {chat.runtime.auth_state.replace('_', ' ')}")


def _one_session(chat: Chat, args: list[str], usage: str) -> str:
    """The session a command names, or the chat's own."""
    if len(args) > 1:
        raise CommandError(f"usage: {usage}")
    if args:
        return args[0]
    assert chat.session_id is not None
    return chat.session_id
