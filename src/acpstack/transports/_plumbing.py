"""Small pieces every transport shares: an inbox for incoming bytes, write flow control."""

from __future__ import annotations

import asyncio
import contextlib

from acpstack.transports._base import DataCallback, EofCallback


class Inbox:
    """Holds incoming bytes until a reader is attached, then passes them straight through.

    The building block of a `Transport`'s reading side: the transport feeds `data` and
    `eof` from its event-loop callbacks, `Transport.start_reading` calls `attach`. It
    guarantees the reader sees every byte once, in order, and `on_eof` once, last.
    """

    def __init__(self) -> None:
        self._on_data: DataCallback | None = None
        self._on_eof: EofCallback | None = None
        self._early: list[bytes] = []
        self._eof = False

    def attach(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Make `on_data`/`on_eof` the reader: what arrived before is delivered now, in
        order (and `on_eof`, if the input already ended). Raises `RuntimeError` when a
        reader is already attached."""
        if self._on_data is not None:
            raise RuntimeError("this transport is already being read")
        self._on_data, self._on_eof = on_data, on_eof
        early, self._early = self._early, []
        for data in early:
            on_data(data)
        if self._eof:
            on_eof()

    def data(self, data: bytes) -> None:
        """Bytes arrived: passed to the reader at once, or kept until one attaches.
        Ignored after `eof`."""
        if self._eof:
            return
        if self._on_data is not None:
            self._on_data(data)
        elif data:
            self._early.append(data)

    def eof(self) -> None:
        """No more bytes will arrive: tell the reader (now, or when it attaches). Only
        the first call counts."""
        if self._eof:
            return
        self._eof = True
        if self._on_eof is not None:
            self._on_eof()


class WriteFlow(asyncio.BaseProtocol):
    """Flow control of an asyncio write transport: `drain` waits while it is paused."""

    def __init__(self) -> None:
        self._paused = False
        self._lost = False
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = asyncio.Event()

    def pause_writing(self) -> None:
        """asyncio's signal that the write buffer passed its high-water mark."""
        self._paused = True

    def resume_writing(self) -> None:
        """asyncio's signal that the write buffer went below its low-water mark: wakes
        every `drain`."""
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        """The transport closed: `drain` no longer waits and `wait_closed` returns."""
        self._lost = True
        self._wake()
        self._closed.set()

    async def wait_closed(self, timeout: float = 5.0) -> None:
        """Wait until the transport has flushed what it buffered and closed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closed.wait(), timeout)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Wait while writing is paused (returns at once when it is not, or when the
        connection is lost)."""
        if not self._paused or self._lost:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter
