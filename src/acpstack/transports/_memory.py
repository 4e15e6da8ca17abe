"""An in-memory connected pair of transports (for tests and embedding)."""

from __future__ import annotations

import asyncio


class MemoryTransport:
    def __init__(self) -> None:
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self.peer: MemoryTransport | None = None
        self._closed = False

    async def read(self) -> bytes:
        if self._closed and self._inbox.empty():
            return b""
        return await self._inbox.get()

    def write(self, data: bytes) -> None:
        if self._closed or self.peer is None or self.peer._closed:
            return
        self.peer._inbox.put_nowait(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def write_buffer_size(self) -> int:
        return 0

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.put_nowait(b"")
        if self.peer is not None and not self.peer._closed:
            self.peer._inbox.put_nowait(b"")

    def close_reason(self) -> str | None:
        return None


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two transports wired to each other: what one writes, the other reads."""
    a, b = MemoryTransport(), MemoryTransport()
    a.peer, b.peer = b, a
    return a, b
