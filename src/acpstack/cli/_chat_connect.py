"""The chat's transport to its agent: a remote URL, or a process (an agent by name is
downloaded first when it is a binary not yet in the cache)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from acpstack.cli._errors import EXIT_USAGE, CliError
from acpstack.cli._registry import RegistryError
from acpstack.transports import SubprocessTransport, Transport

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat

#: Recent agent stderr lines kept (the last 20 are shown when the agent dies).
STDERR_TAIL_LINES = 200
#: Agent stderr lines that are meant for the user and shown in the chat: what an
#: `acpstack inspect` between the chat and the agent says (its live page's address).
SHOWN_STDERR_PREFIXES = ("acpstack inspect: ",)


async def connect(chat: Chat) -> Transport:
    opts = chat.opts
    if opts.url:
        from acpstack.cli._remote import REMOTE_ERRORS, describe, remote_transport

        try:
            return await remote_transport(opts.url, opts.token)
        except ValueError as exc:  # not an http(s):// or ws(s):// URL
            raise CliError(describe(exc), EXIT_USAGE) from None
        except REMOTE_ERRORS as exc:
            raise CliError(describe(exc)) from None
    command = opts.agent_command
    if opts.launch is not None:
        try:
            progress = chat.err.print
            command = await asyncio.to_thread(opts.launch.ready_command, progress)
        except RegistryError as exc:
            raise CliError(f"error: {exc}") from None
    try:
        return await SubprocessTransport.spawn(
            command,
            env=opts.agent_env,
            cwd=opts.cwd,
            stderr_tail_lines=STDERR_TAIL_LINES,
            stderr_callback=lambda line: _show_if_for_the_user(chat, line),
            description=chat.shown_command,
        )
    except OSError as exc:
        raise CliError(f"error: could not start the agent `{chat.shown_command}`: {exc}") from None


def _show_if_for_the_user(chat: Chat, line: str) -> None:
    """Show the agent's stderr `line` in the chat when it is addressed to the user; the
    rest stays in the tail (shown when the agent dies)."""
    if line.startswith(SHOWN_STDERR_PREFIXES):
        from rich.text import Text

        text = Text(line, style="cyan")
        chat.show(lambda: chat.say(text))
