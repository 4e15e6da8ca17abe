"""An in-memory pipe between the server and an in-process agent, with flow control.

Like `memory_pair`, bytes arrive on a later loop turn (a write never re-enters the
reader), but a writer also sees how much its reader holds: `write_buffer_size` counts
the bytes the other end has not taken yet, and `drain` waits while that is above the
high-water mark. So an agent that streams faster than the remote client reads is slowed
down instead of filling memory.

`pipe_pair(at_once=True)` (the in-process agent's pipe) hands a write to the reader
inside the `write` call when nothing waits before it: a request and its answer then cross
the pipe without a loop turn each way. Order still holds: while the reader is paused,
holds bytes, or is already taking a write (a reader that writes back to its writer),
the write is held and handed over on the next loop turn as usual.
"""

from __future__ import annotations

import asyncio
from collections import deque

from acpstack.transports import DataCallback, EofCallback, Inbox

HIGH_WATER = 1024 * 1024
# held chunks up to this size in all are joined and handed over as one (a frame and its
# newline make one whole line, which the reader decodes in one pass); above it each chunk
# goes as it was written, so a big frame is never copied to add its newline
JOIN_LIMIT = 64 * 1024


class PipeEnd:
    def __init__(self, high_water: int = HIGH_WATER, *, at_once: bool = False) -> None:
        self.peer: PipeEnd | None = None
        self._high = high_water
        self._at_once = at_once
        self._taking = False  # inside the reader's callback, handed a write at once
        self._inbox = Inbox()
        self._held: deque[bytes] = deque()
        self._held_size = 0
        self._paused = False
        self._scheduled = False
        self._eof_pending = False
        self._closed = False
        self._drain_waiters: list[asyncio.Future[None]] = []  # writers waiting for us to take bytes

    # -- reading ---------------------------------------------------------------------

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        self._inbox.attach(on_data, on_eof)
        self._schedule()

    def pause_reading(self) -> None:
        self._paused = True

    def resume_reading(self) -> None:
        self._paused = False
        self._schedule()

    def _arrive(self, data: bytes) -> None:
        if self._at_once and not (self._held or self._paused or self._taking or self._closed):
            self._taking = True
            try:
                self._inbox.data(data)
            except Exception as exc:  # the reader's failure is not the writer's
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "a pipe reader failed", "exception": exc}
                )
            finally:
                self._taking = False
            return
        self._held.append(data)
        self._held_size += len(data)
        self._schedule()

    def _arrive_eof(self) -> None:
        self._eof_pending = True
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled and not self._paused:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._release)

    def _release(self) -> None:
        self._scheduled = False
        if self._paused:
            return
        if self._held:
            held = list(self._held)
            if len(held) > 1 and self._held_size <= JOIN_LIMIT:
                held = [b"".join(held)]
            self._held.clear()
            self._held_size = 0
            self._wake_writers()
            self._taking = True  # a write these cause waits behind them
            try:
                for data in held:
                    self._inbox.data(data)
            finally:
                self._taking = False
        if self._eof_pending and not self._held and not self._paused:
            self._inbox.eof()

    def _wake_writers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- writing ---------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        peer = self.peer
        if self._closed or peer is None or peer._closed or not data:
            return
        peer._arrive(data)

    async def drain(self) -> None:
        peer = self.peer
        while (
            peer is not None
            and not peer._closed
            and not self._closed
            and peer._held_size > self._high
        ):
            waiter = asyncio.get_running_loop().create_future()
            peer._drain_waiters.append(waiter)
            await waiter

    def write_buffer_size(self) -> int:
        return self.peer._held_size if self.peer is not None else 0

    # -- closing ---------------------------------------------------------------------

    async def settle(self) -> None:
        return None

    def close_reason(self) -> str | None:
        return None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._held.clear()
        self._held_size = 0
        self._wake_writers()
        self._eof_pending = True
        self._paused = False
        self._schedule()
        peer = self.peer
        if peer is not None and not peer._closed:
            peer._wake_writers()
            peer._arrive_eof()


def pipe_pair(high_water: int = HIGH_WATER, *, at_once: bool = False) -> tuple[PipeEnd, PipeEnd]:
    a, b = PipeEnd(high_water, at_once=at_once), PipeEnd(high_water, at_once=at_once)
    a.peer, b.peer = b, a
    return a, b
