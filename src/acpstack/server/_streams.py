"""Outbound streams: the messages waiting for one receiver (an SSE response or a WebSocket).

Messages are held until a receiver takes them, so a session's stream may be fed before
the client opened it. Each stream reports its size to its connection, which stops
reading from the agent while too much is waiting (backpressure).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

SizeCallback = Callable[[int], None]


class OutboundStream:
    __slots__ = (
        "session_id",
        "_frames",
        "size",
        "attached",
        "closed",
        "_waiter",
        "_on_size",
        "_listener",
    )

    def __init__(self, session_id: str | None, on_size: SizeCallback) -> None:
        self.session_id: str | None = session_id
        self._frames: deque[bytes] = deque()
        self.size: int = 0
        self.attached: bool = False
        self.closed: bool = False
        self._waiter: asyncio.Future[None] | None = None
        self._on_size = on_size
        self._listener: Callable[[], None] | None = None

    def push(self, frame: bytes) -> None:
        if self.closed:
            return
        self._frames.append(frame)
        self.size += len(frame)
        self._on_size(len(frame))
        self._wake()

    def take(self) -> list[bytes]:
        frames = list(self._frames)
        self._frames.clear()
        if self.size:
            size, self.size = self.size, 0
            self._on_size(-size)
        return frames

    @property
    def empty(self) -> bool:
        return not self._frames

    def attach(self) -> bool:
        """Claim the stream for a receiver; False when another one has it (409)."""
        if self.attached or self.closed:
            return False
        self.attached = True
        return True

    def detach(self) -> None:
        self.attached = False

    def close(self) -> None:
        self.closed = True
        self.take()
        self._wake()

    async def wait(self, timeout: float, also: asyncio.Future[object] | None = None) -> bool:
        """Wait until there is something to take or the stream closed (or `also` finished).
        False when the timeout passed first."""
        if self._frames or self.closed:
            return True
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        waitables: set[asyncio.Future[object]] = {waiter}
        if also is not None:
            waitables.add(also)
        try:
            done, _ = await asyncio.wait(
                waitables, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._waiter = None
            if not waiter.done():
                waiter.cancel()
        return bool(done)

    def listen(self, listener: Callable[[], None] | None) -> None:
        """Call `listener` (too) whenever `wait` would wake: a receiver that needs no task."""
        self._listener = listener

    def _wake(self) -> None:
        if self._listener is not None:
            self._listener()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
