"""This process's own stdin/stdout as the transport (how an agent is served).

How each side is read or written depends on what the descriptor is:
- pipes, and sockets (one for stdin, another for stdout, as Node and libuv spawn
  children): the event loop's pipe transports, push-based, the fast path;
- terminals, and one socket serving as both stdin and stdout: `add_reader` /
  `add_writer` (`_fdio`), because a pipe write transport also reads its descriptor;
- regular files and devices such as /dev/null, which epoll refuses: a reading thread
  and blocking writes (`_blocking`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import Callable
from typing import Protocol, TextIO

from acpstack._reads import read_in_heap_sized_chunks
from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._blocking import BlockingWriter, ThreadReader
from acpstack.transports._fdio import FdReader, FdWriter
from acpstack.transports._plumbing import Inbox, WriteFlow


class StdioError(RuntimeError):
    """stdin or stdout cannot carry ACP (closed, or opened the wrong way round)."""


class _Reader(Protocol):
    """How stdin is read (one of the three kinds in the module doc); feeds an `Inbox`."""

    def start(self) -> None:
        """Begin reading, if that did not start at once."""

    def pause(self) -> None:
        """Stop reading until `resume`."""

    def resume(self) -> None:
        """Read again after `pause`."""

    def close(self) -> None:
        """Stop reading and close the descriptor."""


class _Writer(Protocol):
    """How stdout is written (one of the three kinds in the module doc)."""

    def write(self, data: bytes) -> None:
        """Queue `data`, never blocking the event loop."""

    def buffer_size(self) -> int:
        """Bytes queued and not yet written."""
        ...

    async def drain(self) -> None:
        """Wait while the buffer is over its high-water mark."""

    def is_closing(self) -> bool:
        """Whether the writer is closed or closing."""
        ...

    async def close(self) -> None:
        """Flush what is queued, then close the descriptor."""


class _ReadSide(asyncio.Protocol):
    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    def data_received(self, data: bytes) -> None:
        self.inbox.data(data)

    def eof_received(self) -> bool:
        self.inbox.eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.inbox.eof()


class _PipeReader:
    """A pipe, socket or terminal, watched by the event loop (reading starts at once)."""

    def __init__(self, transport: asyncio.ReadTransport) -> None:
        self._transport = transport

    def start(self) -> None:
        return None

    def pause(self) -> None:
        if not self._transport.is_closing():
            self._transport.pause_reading()

    def resume(self) -> None:
        if not self._transport.is_closing():
            self._transport.resume_reading()

    def close(self) -> None:
        self._transport.close()


class _PipeWriter:
    write: Callable[[bytes], None]
    is_closing: Callable[[], bool]
    buffer_size: Callable[[], int]

    def __init__(self, transport: asyncio.WriteTransport, flow: WriteFlow) -> None:
        self._transport = transport
        self._flow = flow
        # The transport's own methods, not wrappers: a write is on every answer's path.
        self.write = transport.write
        self.is_closing = transport.is_closing
        self.buffer_size = transport.get_write_buffer_size

    async def drain(self) -> None:
        await self._flow.drain()

    async def close(self) -> None:
        self._transport.close()  # flushes what is buffered first: the last answers arrive
        await self._flow.wait_closed()


class StdioTransport:
    """stdin/stdout of this process. While open, fd 1 and `sys.stdout` point at stderr,
    so a stray `print()` (or a C library writing to stdout) cannot corrupt the wire.

    Make one with `open_stdio_transport`. It reads and writes duplicates of fds 0 and 1;
    `close` flushes what is written, closes them and puts back what serving changed
    (fd 1, `sys.stdout`, the descriptors' blocking mode).
    """

    def __init__(self, reader: _Reader, writer: _Writer, inbox: Inbox, restore: _Restore) -> None:
        self._reader = reader
        self._writer = writer
        self._inbox = inbox
        self._restore: _Restore | None = restore
        self._closed = False

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver what arrives on stdin to `on_data` (what came since the transport was
        opened first), then call `on_eof` once at end of input. Raises `RuntimeError` when
        called twice."""
        self._inbox.attach(on_data, on_eof)
        self._reader.start()

    def pause_reading(self) -> None:
        """Stop reading stdin until `resume_reading` (the peer's bytes wait in the pipe)."""
        self._reader.pause()

    def resume_reading(self) -> None:
        """Read stdin again after `pause_reading`."""
        self._reader.resume()

    def write(self, data: bytes) -> None:
        """Queue `data` for stdout, in order (written at once when the pipe takes it).
        Dropped after `close` or once stdout failed (e.g. the reader went away)."""
        if not self._closed and not self._writer.is_closing():
            self._writer.write(data)

    async def drain(self) -> None:
        """Wait while more than the high-water mark is queued for stdout."""
        await self._writer.drain()

    def write_buffer_size(self) -> int:
        """Bytes queued for stdout and not yet written."""
        return self._writer.buffer_size()

    async def settle(self) -> None:
        """Nothing to wait for: returns at once."""
        return None

    def close_reason(self) -> str | None:
        """Always None: whoever started this process knows why it closed stdin."""
        return None

    async def close(self) -> None:
        """Flush what is queued for stdout, close the duplicated descriptors and restore
        fd 1, `sys.stdout` and the blocking modes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._writer.close()
        self._reader.close()
        if self._restore is not None:
            restore, self._restore = self._restore, None
            restore.apply()


class _Restore:
    """What serving changed on fds 0 and 1, put back on close."""

    def __init__(self, blocking: tuple[bool, bool], stdout: tuple[int, TextIO] | None) -> None:
        self.blocking = blocking
        self.stdout = stdout

    def apply(self) -> None:
        """Put fd 1, `sys.stdout` and the blocking modes back as they were."""
        if self.stdout is not None:
            saved_fd, saved_stdout = self.stdout
            with contextlib.suppress(OSError):
                os.dup2(saved_fd, 1)
                os.close(saved_fd)
            sys.stdout = saved_stdout
        # The event loop made the shared descriptions non-blocking (e.g. the user's terminal).
        for fd, was_blocking in enumerate(self.blocking):
            with contextlib.suppress(OSError):
                if os.get_blocking(fd) != was_blocking:
                    os.set_blocking(fd, was_blocking)


def _check(fd: int, name: str, *, read: bool) -> None:
    import fcntl

    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        raise StdioError(f"{name} is closed") from None
    if (flags & os.O_ACCMODE) == (os.O_WRONLY if read else os.O_RDONLY):
        raise StdioError(f"{name} is not open for {'reading' if read else 'writing'}")


def _kind(fd: int) -> str:
    """ "pipe" or "socket" (the loop's pipe transports), "tty", or "file" (what epoll refuses)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode):
        return "pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) and os.isatty(fd):
        return "tty"
    return "file"


def _same_file(a: int, b: int) -> bool:
    sa, sb = os.fstat(a), os.fstat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


async def _open_reader(
    loop: asyncio.AbstractEventLoop, fd: int, inbox: Inbox, kind: str
) -> _Reader:
    if kind == "file":
        return ThreadReader(fd, inbox, loop)
    if kind == "tty" or kind == "duplex":
        return FdReader(fd, inbox, loop)
    transport, _ = await loop.connect_read_pipe(lambda: _ReadSide(inbox), os.fdopen(fd, "rb", 0))
    read_in_heap_sized_chunks(transport)
    return _PipeReader(transport)


async def _open_writer(loop: asyncio.AbstractEventLoop, fd: int, kind: str) -> _Writer:
    if kind == "file":
        return BlockingWriter(fd)
    if kind == "tty" or kind == "duplex":
        return FdWriter(fd, loop)
    transport, flow = await loop.connect_write_pipe(WriteFlow, os.fdopen(fd, "wb", 0))
    return _PipeWriter(transport, flow)


async def open_stdio_transport(
    *, protect_stdout: bool = True, direct_io: bool = False
) -> StdioTransport:
    """stdin/stdout as a transport. Raises `StdioError` (one clear sentence) when they
    cannot carry ACP; any kind of descriptor that can be read or written works.

    Nothing that arrives before `start_reading` is lost. With `protect_stdout` (the
    default), fd 1 and `sys.stdout` point at stderr until the transport is closed, so
    nothing but frames reaches the real stdout. With `direct_io`, pipes and sockets are
    read and written by this process itself (`add_reader`/`add_writer`) rather than by
    the event loop's pipe transports: less work per message (the conductor's choice);
    a reader that went away is then noticed at the next write.

    Have one open at a time: the transport owns stdin and stdout until it is closed.
    """
    loop = asyncio.get_running_loop()
    _check(0, "stdin", read=True)
    _check(1, "stdout", read=False)
    blocking = (os.get_blocking(0), os.get_blocking(1))
    in_kind, out_kind = _kind(0), _kind(1)
    if in_kind == out_kind == "socket" and _same_file(0, 1):
        in_kind = out_kind = "duplex"
    if direct_io:  # watched descriptors, as a duplex socket's
        in_kind, out_kind = (
            ("duplex" if k in ("pipe", "socket") else k) for k in (in_kind, out_kind)
        )
    inbox = Inbox()
    in_fd, out_fd = os.dup(0), os.dup(1)
    reader: _Reader | None = None
    try:
        reader = await _open_reader(loop, in_fd, inbox, in_kind)
        writer = await _open_writer(loop, out_fd, out_kind)
    except (OSError, ValueError) as exc:
        if reader is not None:
            reader.close()
        raise StdioError(f"cannot use stdin/stdout: {exc}") from exc
    saved_stdout: tuple[int, TextIO] | None = None
    if protect_stdout:
        sys.stdout.flush()
        saved_stdout = (os.dup(1), sys.stdout)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr either: stray output goes nowhere
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
        sys.stdout = sys.stderr
    return StdioTransport(reader, writer, inbox, _Restore(blocking, saved_stdout))
