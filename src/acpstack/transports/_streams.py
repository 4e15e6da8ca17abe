"""A Transport over an asyncio StreamReader/StreamWriter pair (e.g. a TCP connection).

Pipes and processes have their own push-based transports, which are faster; this one
exists for anything asyncio hands out as streams.
"""

from __future__ import annotations

import asyncio
import contextlib

from acpstack._tasks import cancel_and_wait
from acpstack.transports._base import DataCallback, EofCallback

READ_CHUNK = 256 * 1024


class StreamTransport:
    """A `Transport` over an asyncio stream pair, e.g. from `asyncio.open_connection`.

    A reader task (started by `start_reading`) reads up to 256 KiB at a time and hands
    each chunk to `on_data`; a connection error counts as the end of input. The
    transport owns both streams: `close` closes the writer and stops the task.

    Args:
        reader: Where the peer's bytes come from.
        writer: Where ours go.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._running = asyncio.Event()
        self._running.set()

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Start the reader task: it hands each chunk read to `on_data`, and calls
        `on_eof` once at end of stream, on a connection error, or when `close` stops it.
        Raises `RuntimeError` when called twice."""
        if self._task is not None:
            raise RuntimeError("this transport is already being read")
        # Owner: this transport; `close` ends it.
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
        """Stop reading after the chunk being delivered; the peer's bytes wait in the
        stream (and the socket) meanwhile."""
        self._running.clear()

    def resume_reading(self) -> None:
        """Read again after `pause_reading`."""
        self._running.set()

    def write(self, data: bytes) -> None:
        """Hand `data` to the stream writer (buffered by asyncio; never blocks). Dropped
        once the transport or the writer is closing."""
        if self._closed or self._writer.is_closing():
            return
        self._writer.write(data)

    async def drain(self) -> None:
        """The stream writer's `drain`; a connection error ends the wait silently (the
        reader sees the end of input)."""
        if self._closed or self._writer.is_closing():
            return
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.drain()

    def write_buffer_size(self) -> int:
        """Bytes in the underlying asyncio transport's write buffer."""
        return self._writer.transport.get_write_buffer_size()

    async def settle(self) -> None:
        """Nothing to wait for: returns at once."""
        return None

    async def close(self) -> None:
        """Close the writer (after what is buffered is sent), wait until it is closed,
        and stop the reader task. Connection errors are ignored. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._writer.close()
            await self._writer.wait_closed()
        if self._task is not None:  # our pump
            await cancel_and_wait(self._task)

    def close_reason(self) -> str | None:
        """Always None: a stream does not say why it ended."""
        return None
