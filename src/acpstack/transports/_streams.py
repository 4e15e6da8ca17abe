"""A Transport over an asyncio StreamReader/StreamWriter pair."""

from __future__ import annotations

import asyncio
import contextlib

READ_CHUNK = 256 * 1024


class StreamTransport:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False

    async def read(self) -> bytes:
        try:
            return await self._reader.read(READ_CHUNK)
        except (ConnectionError, OSError):
            return b""

    def write(self, data: bytes) -> None:
        if self._closed or self._writer.is_closing():
            return
        self._writer.write(data)

    async def drain(self) -> None:
        if self._closed or self._writer.is_closing():
            return
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.drain()

    def write_buffer_size(self) -> int:
        return self._writer.transport.get_write_buffer_size()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._writer.close()
            await self._writer.wait_closed()

    def close_reason(self) -> str | None:
        return None
