"""What the runtime needs from a byte pipe."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

DataCallback = Callable[[bytes], None]
EofCallback = Callable[[], None]


class Transport(Protocol):
    """A bidirectional byte stream carrying ACP frames.

    Reading is push-based: the transport calls `on_data` from the event loop as soon as
    bytes arrive (no task wake-up in between, which is most of a round trip's cost).
    """

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver incoming bytes to `on_data` from now on (bytes that came earlier first),
        then call `on_eof` once when the peer closed its side. Called once."""
        ...

    def pause_reading(self) -> None:
        """Stop delivering bytes until `resume_reading` (backpressure)."""
        ...

    def resume_reading(self) -> None: ...

    def write(self, data: bytes) -> None:
        """Queue bytes for sending (never blocks; use `drain` for backpressure)."""
        ...

    async def drain(self) -> None:
        """Wait until the write buffer is below its high-water mark."""
        ...

    def write_buffer_size(self) -> int: ...

    async def close(self) -> None:
        """Close our side and release the pipe (idempotent)."""
        ...

    async def settle(self) -> None:
        """Called after end of input: wait briefly until `close_reason` can say why the
        peer left (e.g. until its process has exited)."""
        ...

    def close_reason(self) -> str | None:
        """Why the peer went away, when known (e.g. a process exit code and stderr tail)."""
        ...
