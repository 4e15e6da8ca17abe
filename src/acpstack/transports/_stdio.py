"""This process's own stdin/stdout as the transport (how an agent is served)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import TextIO

from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._plumbing import Inbox, WriteFlow


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


class StdioTransport:
    """stdin/stdout of this process. While open, fd 1 and `sys.stdout` point at stderr,
    so a stray `print()` (or a C library writing to stdout) cannot corrupt the wire."""

    def __init__(
        self,
        reader: asyncio.ReadTransport,
        writer: asyncio.WriteTransport,
        inbox: Inbox,
        flow: WriteFlow,
        restore: tuple[int, TextIO] | None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._inbox = inbox
        self._flow = flow
        self._restore = restore
        self._closed = False

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        self._inbox.attach(on_data, on_eof)

    def pause_reading(self) -> None:
        if not self._reader.is_closing():
            self._reader.pause_reading()

    def resume_reading(self) -> None:
        if not self._reader.is_closing():
            self._reader.resume_reading()

    def write(self, data: bytes) -> None:
        if not self._closed and not self._writer.is_closing():
            self._writer.write(data)

    async def drain(self) -> None:
        await self._flow.drain()

    def write_buffer_size(self) -> int:
        return self._writer.get_write_buffer_size()

    async def settle(self) -> None:
        return None

    def close_reason(self) -> str | None:
        return None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.close()  # flushes what is buffered first: the last answers arrive
        self._reader.close()
        await self._flow.wait_closed()
        if self._restore is not None:
            saved_fd, saved_stdout = self._restore
            self._restore = None
            with contextlib.suppress(OSError):
                os.dup2(saved_fd, 1)
                os.close(saved_fd)
            sys.stdout = saved_stdout


async def open_stdio_transport(*, protect_stdout: bool = True) -> StdioTransport:
    loop = asyncio.get_running_loop()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    restore: tuple[int, TextIO] | None = None
    if protect_stdout:
        sys.stdout.flush()
        restore = (os.dup(1), sys.stdout)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    inbox = Inbox()
    try:
        reader, _ = await loop.connect_read_pipe(lambda: _ReadSide(inbox), os.fdopen(in_fd, "rb", 0))
        writer, flow = await loop.connect_write_pipe(WriteFlow, os.fdopen(out_fd, "wb", 0))
    except ValueError as exc:  # a regular file is not a pipe: asyncio cannot watch it
        raise RuntimeError("stdin/stdout must be pipes, sockets or terminals to serve ACP on stdio") from exc
    return StdioTransport(reader, writer, inbox, flow, restore)
