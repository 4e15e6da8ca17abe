"""The chat's prompt loop: read a prompt, run it (or a built-in command), show the turn.

Ctrl-C while a turn runs cancels it (a second one quits); at the prompt it clears the
line, and on an empty line a second Ctrl-C quits. Ctrl-D quits. With `--timeout`, a turn
that runs longer is cancelled and the chat goes on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rich.text import Text

from acpstack._tasks import cancel_and_wait
from acpstack.cli._chat_headless import run_turn
from acpstack.cli._commands import CommandError, builtin_for
from acpstack.cli._errors import EXIT_OK, CliError
from acpstack.cli._input import Interrupted
from acpstack.wire import CapabilityError, RequestError

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat

#: How often a running terminal's output is refreshed on screen (seconds).
TERMINAL_REFRESH_PAUSE = 0.1  # at most ten redraws a second while commands print


async def interactive(chat: Chat) -> int:
    assert chat.input is not None
    empty_interrupts = 0
    while not chat.quit.is_set():
        try:
            line = await _read_or_quit(chat, "> ")
        except Interrupted:
            empty_interrupts += 1
            if empty_interrupts >= 2:
                break
            chat.say(Text("(Ctrl-C again or Ctrl-D to quit)", style="dim"))
            continue
        if line is None:
            break
        empty_interrupts = 0
        if not line.strip():
            continue
        command = builtin_for(chat, line.strip())
        try:
            if command is not None:
                await command[0].run(chat, command[1])
            else:
                await _turn(chat, line)
        except (RequestError, CapabilityError, CommandError, CliError) as exc:
            _show_error(chat, exc)
    return EXIT_OK


def _show_error(chat: Chat, exc: Exception) -> None:
    if isinstance(exc, RequestError):
        message = f"error from the agent: {exc.message} (code {exc.code})"
    elif isinstance(exc, CliError):
        message = exc.message
    else:
        message = f"error: {exc}"
    chat.say(Text(message, style="red"))


async def _read_or_quit(chat: Chat, prompt: str) -> str | None:
    """The next line, or None on Ctrl-D or when the chat is ending."""
    assert chat.input is not None
    read = asyncio.ensure_future(chat.input.read_line(prompt))
    quit_wait = asyncio.ensure_future(chat.quit.wait())
    try:
        done, _ = await asyncio.wait([read, quit_wait], return_when=asyncio.FIRST_COMPLETED)
    finally:
        quit_wait.cancel()
    if read not in done:
        await cancel_and_wait(read)
        return None
    try:
        return read.result()
    except EOFError:
        return None


async def _turn(chat: Chat, text: str) -> None:
    assert chat.session_id is not None
    follower = asyncio.ensure_future(_follow_terminals(chat, chat.session_id))
    deadline = None
    if chat.opts.timeout is not None:
        deadline = asyncio.get_running_loop().call_later(chat.opts.timeout, _turn_timeout, chat)
    try:
        result = await run_turn(chat, text)
        if result.stop_reason != "end_turn":
            chat.say(Text(f"[turn ended: {result.stop_reason}]", style="yellow"))
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not chat.quit.is_set() or (current is not None and current.cancelling()):
            raise  # not our double Ctrl-C: we are being cancelled ourselves
    finally:
        follower.cancel()
        await asyncio.wait([follower])
        if deadline is not None:
            deadline.cancel()


def _turn_timeout(chat: Chat) -> None:
    if chat.turn is not None and not chat.turn.done() and chat.session_id is not None:
        chat.say(
            Text(f"\nthe turn took over {chat.opts.timeout:g} s: cancelling it", style="yellow")
        )
        chat.keep(asyncio.get_running_loop().create_task(chat.runtime.cancel(chat.session_id)))


async def _follow_terminals(chat: Chat, session_id: str) -> None:
    """Redraw the live lines of running commands when their terminals change."""
    terminals = chat.runtime.terminals
    change = terminals.changed()
    while True:
        await change
        change = terminals.changed()  # taken first: a change during the redraw is not missed
        if chat.renderer is not None:
            chat.renderer.poll_terminals(session_id)
        await asyncio.sleep(TERMINAL_REFRESH_PAUSE)  # a rate limit, not a wait
