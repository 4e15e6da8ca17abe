"""What `acpstack chat` reads from its user: lines on a thread, permission answers, completion."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import IO, TYPE_CHECKING, Any, cast

from rich.console import Console
from rich.text import Text

from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat, ChatOptions

BUILTINS = ["/mode", "/config", "/sessions", "/load", "/help", "/quit"]


class QuietWhenGone:
    """A text stream that goes quiet once writing to it fails (the terminal hung up, the
    pipe was closed): the chat then still shuts down in order instead of failing at its
    next line of output."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError:
                self.gone = True

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding...: the stream's own
        return getattr(self._stream, name)


def quiet_when_gone(stream: IO[str]) -> IO[str]:
    return cast(IO[str], QuietWhenGone(stream))


class HeadlessPolicy:
    """Permissions in headless mode follow explicit flags only; otherwise rejected, and said so."""

    def __init__(self, opts: ChatOptions, err: Console) -> None:
        self.opts = opts
        self.err = err

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        title = (
            request.tool_call.title if isinstance(request.tool_call.title, str) else "a tool call"
        )
        kind = request.tool_call.kind if isinstance(request.tool_call.kind, str) else "other"
        auto = self.opts.auto_approve_reason
        allow = not self.opts.deny_all and (
            self.opts.approve_all or auto is not None or kind in self.opts.allow_kinds
        )
        if allow:
            option = next((o for o in request.options if o.kind == "allow_once"), None) or next(
                (o for o in request.options if o.kind == "allow_always"), None
            )
            if option is not None:
                why = auto or ("--approve-all" if self.opts.approve_all else f"--allow {kind}")
                self.err.print(Text(f"permission: approved {title!r} ({why})", style="yellow"))
                return option
        if self.opts.deny_all:
            reason = "--deny-all"
        else:
            reason = "no --approve-all or --allow given"
        self.err.print(Text(f"permission: rejected {title!r} ({reason})", style="yellow"))
        return None


class LineReader:
    """Reads lines on a daemon thread, one request at a time, so prompts print at the right moment.

    `input()` cannot be interrupted, so nothing ever waits for the thread: at shutdown it is
    left blocked in its read and ends with the process. What readline changed on the
    terminal (no echo, raw input) is put back by `restore_terminal`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._requests: list[tuple[str, asyncio.Future[str | None]]] = []
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._terminal_modes: list[Any] | None = None

    def start(self) -> None:
        with contextlib.suppress(ImportError, OSError):
            import termios

            with contextlib.suppress(termios.error):
                if os.isatty(0):
                    self._terminal_modes = termios.tcgetattr(0)
        threading.Thread(target=self._run, name="acpstack-input", daemon=True).start()

    def restore_terminal(self) -> None:
        if self._terminal_modes is not None:
            import termios

            with contextlib.suppress(OSError, termios.error):  # e.g. the terminal hung up
                termios.tcsetattr(0, termios.TCSADRAIN, self._terminal_modes)

    def read(self, prompt: str) -> asyncio.Future[str | None]:
        fut: asyncio.Future[str | None] = self.loop.create_future()
        with self._lock:
            self._requests.append((prompt, fut))
        self._wake.set()
        return fut

    def _run(self) -> None:
        while True:
            self._wake.wait()
            with self._lock:
                if not self._requests:
                    self._wake.clear()
                    continue
                prompt, fut = self._requests.pop(0)
            try:
                line: str | None = input(prompt)
            except Exception:  # EOFError (Ctrl-D), or a terminal that went away
                line = None
            try:
                self.loop.call_soon_threadsafe(_resolve, fut, line)
            except RuntimeError:  # the loop is closed: the chat has ended
                return


def _resolve(fut: asyncio.Future[str | None], value: str | None) -> None:
    if not fut.done():
        fut.set_result(value)


class InteractivePolicy:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.chat.renderer.show_permission(request)
        assert self.chat.reader is not None
        while True:
            line = await self.chat.reader.read(f"choose 1-{len(request.options)}: ")
            if line is None:
                return None
            line = line.strip()
            if line.isdigit() and 1 <= int(line) <= len(request.options):
                return request.options[int(line) - 1]
            self.chat.console.print(f"please answer with a number from 1 to {len(request.options)}")


def install_completion(chat: Chat) -> None:
    try:
        import readline
    except ImportError:
        return

    def complete(text: str, state: int) -> str | None:
        names = list(BUILTINS)
        if chat.session_id is not None and chat.session_id in chat.runtime.sessions:
            names += [
                f"/{c.name}"
                for c in chat.runtime.sessions[chat.session_id].state.available_commands
            ]
        matches = [n for n in names if n.startswith(text)]
        return matches[state] if state < len(matches) else None

    readline.set_completer_delims(" \t\n")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")
