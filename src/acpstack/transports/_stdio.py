"""This process's own stdin/stdout as the transport (how an agent is served)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import TextIO

from acpstack.transports._streams import StreamTransport


class StdioTransport(StreamTransport):
    """stdin/stdout of this process. While open, fd 1 and `sys.stdout` point at stderr,
    so a stray `print()` (or a C library writing to stdout) cannot corrupt the wire."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, restore: tuple[int, TextIO] | None) -> None:
        super().__init__(reader, writer)
        self._restore = restore

    async def close(self) -> None:
        await super().close()
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
    reader = asyncio.StreamReader(limit=2**31)
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        await loop.connect_read_pipe(lambda: protocol, os.fdopen(in_fd, "rb", 0))
        w_transport, w_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", 0))
    except ValueError as exc:  # a regular file is not a pipe: asyncio cannot watch it
        raise RuntimeError("stdin/stdout must be pipes, sockets or terminals to serve ACP on stdio") from exc
    writer = asyncio.StreamWriter(w_transport, w_protocol, reader, loop)
    return StdioTransport(reader, writer, restore)
