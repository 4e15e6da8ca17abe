"""Opening the chat's session: new, loaded (or resumed) by id, or the one a name
(`-s NAME`) points to; then --mode and --config, checked against what the session offers."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.text import Text

from acpstack.cli._errors import EXIT_ERROR, EXIT_NO_SESSION, EXIT_USAGE, CliError
from acpstack.schema import v1 as acp
from acpstack.wire import AUTH_REQUIRED, RequestError

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat


async def open_session(chat: Chat) -> None:
    book = chat.opts.book
    wanted = chat.opts.session or (book.known_session_id if book is not None else None)
    if wanted is not None:
        try:
            await load_session(chat, wanted)
            return
        except RequestError as err:
            if err.code == AUTH_REQUIRED or chat.opts.session is not None:
                raise CliError(
                    f"no such session {wanted!r}: the agent answered {err.message!r}",
                    EXIT_NO_SESSION,
                ) from None
            chat.err.print(
                Text(
                    f"the agent no longer has session {wanted}; starting a new one",
                    style="yellow",
                )
            )
    await new_session(chat)


async def new_session(chat: Chat, *, switched: bool = False) -> None:
    cwd = os.path.abspath(chat.opts.cwd)
    try:
        response = await chat.runtime.new_session(cwd, mcp_servers=chat.opts.mcp_servers)
    except RequestError as err:
        if err.code == AUTH_REQUIRED:
            from acpstack.cli._chat_auth import no_usable_login

            unusable = no_usable_login(chat)
            if unusable is not None:
                raise unusable from None
        raise
    chat.session_id = response.session_id
    if chat.opts.book is not None:
        chat.opts.book.opened(response.session_id, switched=switched)


async def load_session(chat: Chat, session_id: str, *, switched: bool = False) -> None:
    """Load (or resume) a session; its history is shown when we are at a terminal."""
    cwd = os.path.abspath(chat.opts.cwd)
    caps = chat.runtime.agent.capabilities
    session_caps = caps.session_capabilities if caps is not None else None
    can_resume = isinstance(session_caps, acp.SessionCapabilities) and isinstance(
        session_caps.resume, acp.SessionResumeCapabilities
    )
    can_load = caps is not None and caps.load_session is True
    if not can_load and not can_resume:
        raise CliError("the agent can neither load nor resume sessions", EXIT_ERROR)
    if chat.opts.book is not None:
        chat.opts.book.lock_session(session_id)
    chat.replaying = True
    if chat.renderer is not None and not chat.headless:
        # The history: what changes in it is shown once, at its end.
        chat.renderer.begin_turn(prompted=False)
    try:
        if can_load and not (chat.headless and can_resume):
            await chat.runtime.load_session(session_id, cwd, mcp_servers=chat.opts.mcp_servers)
        else:
            await chat.runtime.resume_session(session_id, cwd, mcp_servers=chat.opts.mcp_servers)
    finally:
        chat.replaying = False
        if chat.renderer is not None and chat.headless:
            chat.renderer.skip_shown(session_id)  # the history was not shown
        elif chat.renderer is not None:
            chat.renderer.end_turn(session_id)
    chat.session_id = session_id
    if chat.opts.book is not None:
        chat.opts.book.opened(session_id, switched=switched)


async def apply_settings(chat: Chat) -> None:
    """--mode (or the profile's mode) and each --config KEY=VALUE, checked against what
    the session offers."""
    from acpstack.cli._commands import set_config, set_mode

    mode = chat.opts.mode or (chat.opts.launch.mode if chat.opts.launch else None)
    try:
        if mode is not None:
            await set_mode(chat, mode)
        for key, value in chat.opts.config:
            await set_config(chat, key, value)
    except ValueError as exc:
        raise CliError(f"error: {exc}", EXIT_USAGE) from None
