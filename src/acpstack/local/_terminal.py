"""One terminal: its process, its bounded output, and how its exit is observed.

The process is started with `loop.subprocess_exec` and the small `SubprocessProtocol`
here rather than `asyncio.create_subprocess_exec`: `Process.wait()` only returns once
every pipe is closed, so a background grandchild that inherited stdout (``server &``)
would make the exit unobservable. The protocol reports the three events separately:
output data, end of output, and exit of the process itself.

A terminal's exit status is published once the process has exited *and* its output
reached EOF. If the process exited but something it started in the background keeps the
output pipe open, the exit is published after the drain time anyway; the background
processes keep running (their output is still collected) until the terminal is killed
or released. Only the last ``output_byte_limit`` bytes of output are kept.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

__all__ = ["Terminal", "TerminalExit", "TerminalOutput", "TerminalProtocol"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TerminalExit:
    """How a terminal's process ended: an exit code, or the name of the killing signal."""

    exit_code: int | None
    """The exit code; None when a signal ended the process (or, rarely, when its end could not be
    observed)."""
    signal: str | None
    """The signal's name, e.g. "SIGKILL"; None when it exited by itself."""


@dataclass(frozen=True, slots=True)
class TerminalOutput:
    """A snapshot of a terminal's output; ``exit_status`` is None while it runs."""

    output: str
    """The output kept: stdout and stderr interleaved, decoded as UTF-8 (an invalid byte becomes
    U+FFFD)."""
    truncated: bool
    """Whether older output was dropped to stay within the byte limit."""
    exit_status: TerminalExit | None
    """How the process ended, once it did and its output was read."""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        if signal.SIGRTMIN < number < signal.SIGRTMAX:
            return f"SIGRTMIN+{number - signal.SIGRTMIN}"
        return f"SIG{number}"


def _exit_from_returncode(returncode: int | None) -> TerminalExit:
    if returncode is None:  # never observed (the process could not be reaped in time)
        return TerminalExit(exit_code=None, signal=None)
    if returncode < 0:
        return TerminalExit(exit_code=None, signal=_signal_name(-returncode))
    return TerminalExit(exit_code=returncode, signal=None)


def _is_continuation(byte: int) -> bool:
    return byte & 0b1100_0000 == 0b1000_0000


class Terminal:
    """State of one terminal. All methods run on the event loop thread."""

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        output_limit: int,
        drain_seconds: float,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.id = terminal_id
        self.session_id = session_id
        self.limit = output_limit
        self.drain_seconds = drain_seconds
        self.buffer = bytearray()
        self.truncated = False
        self.peak_held = 0
        self.transport: asyncio.SubprocessTransport | None = None
        self.pid = 0
        self.returncode: int | None = None
        self.exit_status: TerminalExit | None = None
        self.exited = asyncio.Event()  # the process itself exited (and was reaped)
        self.eof = asyncio.Event()  # the output pipe closed: no more output
        self.done = asyncio.Event()  # exit_status is published
        self.group_gone = False  # the process group has no members left
        self.kill_task: asyncio.Task[None] | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._changed: asyncio.Future[None] | None = None
        self._on_change = on_change  # the manager's signal for "some terminal changed"

    # -- events from the protocol ----------------------------------------------------

    def on_data(self, data: bytes) -> None:
        limit = self.limit
        if len(data) >= limit:
            dropped = len(self.buffer) + len(data) > limit
            self.buffer.clear()
            if limit > 0:
                self.buffer += data[len(data) - limit :]
        else:
            overflow = len(self.buffer) + len(data) - limit
            dropped = overflow > 0
            if dropped:
                del self.buffer[:overflow]
            self.buffer += data
        if dropped:
            self.truncated = True
            # Start at a character boundary: skip (at most 3) UTF-8 continuation bytes.
            skip = 0
            while skip < 3 and skip < len(self.buffer) and _is_continuation(self.buffer[skip]):
                skip += 1
            if skip:
                del self.buffer[:skip]
        if len(self.buffer) > self.peak_held:
            self.peak_held = len(self.buffer)
        self._notify()

    def on_eof(self) -> None:
        self.eof.set()
        if self.exited.is_set():
            self.finish()
        self._notify()

    def on_exit(self) -> None:
        assert self.transport is not None
        self.returncode = self.transport.get_returncode()
        self.exited.set()
        if self.eof.is_set():
            self.finish()
        elif self._drain_timer is None:
            loop = asyncio.get_running_loop()
            self._drain_timer = loop.call_later(self.drain_seconds, self._drain_expired)
        self._notify()

    def _drain_expired(self) -> None:
        logger.info(
            "terminal %s: process exited but its output is still open "
            "(background processes?); reporting the exit anyway",
            self.id,
        )
        self.finish()

    def finish(self) -> None:
        """Publish the exit status (idempotent)."""
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        if self.done.is_set():
            return
        self.exit_status = _exit_from_returncode(self.returncode)
        self.done.set()
        if self.eof.is_set():
            # Everything is over: shrink the window in which a recycled pid could be
            # mistaken for our process group, and free the transport.
            self.probe_group()
            self.close_transport()
        self._notify()
        logger.debug("terminal %s finished: %s", self.id, self.exit_status)

    # -- helpers ---------------------------------------------------------------------

    def attach(self, transport: asyncio.SubprocessTransport) -> None:
        self.transport = transport
        self.pid = transport.get_pid()

    def close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def signal_group(self, sig: signal.Signals) -> None:
        if self.group_gone or self.pid <= 0:
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            self.group_gone = True
        except PermissionError:
            logger.warning(
                "terminal %s: not allowed to send %s to its processes", self.id, sig.name
            )
        else:
            logger.debug("terminal %s: sent %s to process group %d", self.id, sig.name, self.pid)

    def probe_group(self) -> None:
        if self.group_gone or self.pid <= 0:
            return
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            self.group_gone = True
        except PermissionError:
            pass

    async def quiet(self) -> None:
        """Wait until the process exited and nothing holds its output pipe any more."""
        await self.exited.wait()
        await self.eof.wait()

    def changed(self) -> asyncio.Future[None]:
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        if self._on_change is not None:
            self._on_change()

    def text(self) -> str:
        # While output may still arrive, an incomplete trailing UTF-8 sequence is held
        # back (its remaining bytes are on the way); once the output is complete, it (and
        # any invalid byte anywhere) becomes U+FFFD. The raw bytes are kept as they came.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(self.buffer, final=self.eof.is_set())


class TerminalProtocol(asyncio.SubprocessProtocol):
    def __init__(self, terminal: Terminal) -> None:
        self._terminal = terminal

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Comes before every other callback. The exit of a quick command can be reported
        # before subprocess_exec() returns (Python 3.13 does), so attach here, not after.
        self._terminal.attach(cast(asyncio.SubprocessTransport, transport))

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._terminal.on_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._terminal.on_eof()

    def process_exited(self) -> None:
        self._terminal.on_exit()
