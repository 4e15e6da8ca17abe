"""An in-memory connected pair of transports (for tests and embedding)."""

from __future__ import annotations

import asyncio
from collections import deque

from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._plumbing import Inbox


class MemoryTransport:
    """One end of an in-memory pipe. Bytes are delivered on a later loop turn, never from
    inside `write`, so a handler that writes is not re-entered by the peer's answer.

    Make connected ends with `memory_pair`. Writes are never buffered on the writing
    side (`write_buffer_size` is always 0), so nothing pushes back on a fast writer; the
    reading side holds what arrives while it is paused.
    """

    def __init__(self) -> None:
        self.peer: MemoryTransport | None = None
        """The other end (None until connected)."""
        self._inbox = Inbox()
        self._held: deque[bytes] = deque()  # arrived while reading is paused
        self._paused = False
        self._eof_pending = False
        self._closed = False

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver what the peer writes to `on_data` (what it wrote earlier first), then
        call `on_eof` once either end is closed. Raises `RuntimeError` when called twice."""
        self._inbox.attach(on_data, on_eof)

    def pause_reading(self) -> None:
        """Hold what arrives (and the end of input) until `resume_reading`."""
        self._paused = True

    def resume_reading(self) -> None:
        """Deliver what was held, in order, on the next loop turn; then read as before."""
        self._paused = False
        asyncio.get_running_loop().call_soon(self._release_held)

    def _release_held(self) -> None:
        while self._held and not self._paused:
            self._inbox.data(self._held.popleft())
        if self._eof_pending and not self._held and not self._paused:
            self._inbox.eof()

    def _arrive(self, data: bytes) -> None:
        if self._paused or self._held:
            self._held.append(data)
        else:
            self._inbox.data(data)

    def _arrive_eof(self) -> None:
        if self._paused or self._held:
            self._eof_pending = True
        else:
            self._inbox.eof()

    def write(self, data: bytes) -> None:
        """Send `data` to the peer; it arrives on a later loop turn, in write order.
        Dropped when either end is closed or the end is not connected."""
        peer = self.peer
        if self._closed or peer is None or peer._closed:
            return
        asyncio.get_running_loop().call_soon(peer._arrive, data)

    async def drain(self) -> None:
        """Yield to the event loop once (there is no buffer to wait for), so a writer in
        a loop lets the peer run."""
        await asyncio.sleep(0)

    def write_buffer_size(self) -> int:
        """Always 0: written bytes go straight to the peer's side."""
        return 0

    async def settle(self) -> None:
        """Nothing to wait for: returns at once."""
        return None

    async def close(self) -> None:
        """End both directions: this end's reader and then the peer's get `on_eof` (the
        peer after what it has not read yet). Later writes, from either end, are dropped.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        loop.call_soon(self._inbox.eof)
        if self.peer is not None and not self.peer._closed:
            loop.call_soon(self.peer._arrive_eof)

    def close_reason(self) -> str | None:
        """Always None: an in-memory peer has nothing to report."""
        return None


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two transports wired to each other: what one writes, the other reads.

    Use them on one event loop; each end is closed on its own (closing one ends the
    other's input too)."""
    a, b = MemoryTransport(), MemoryTransport()
    a.peer, b.peer = b, a
    return a, b
