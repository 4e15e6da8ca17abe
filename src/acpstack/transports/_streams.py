"""A Transport over an asyncio StreamReader/StreamWriter pair (e.g. a TCP connection).

Pipes and processes have their own push-based transports, which are faster; this one
exists for anything asyncio hands out as streams.
"""

from __future__ import annotations

import asyncio
import contextlib

from acpstack.transports._base import DataCallback, EofCallback

READ_CHUNK = 256 * 1024


class StreamTransport:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._running = asyncio.Event()
        self._running.set()

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        if self._task is not None:
            raise RuntimeError("this transport is already being read")
        self._task = asyncio.get_running_loop().create_task(self._pump(on_data, on_eof))

    async def _pump(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        try:
            while True:
                await self._running.wait()
                try:
                    data = await self._reader.read(READ_CHUNK)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    break
                on_data(data)
        finally:
            on_eof()

    def pause_reading(self) -> None:
        self._running.clear()

    def resume_reading(self) -> None:
        self._running.set()

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

    async def settle(self) -> None:
        return None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._writer.close()
            await self._writer.wait_closed()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def close_reason(self) -> str | None:
        return None
