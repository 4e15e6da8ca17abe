"""What the runtime needs from a byte pipe."""

from __future__ import annotations

from typing import Protocol


class Transport(Protocol):
    """A bidirectional byte stream carrying ACP frames."""

    async def read(self) -> bytes:
        """The next chunk of bytes; b"" once the peer closed its side."""
        ...

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

    def close_reason(self) -> str | None:
        """Why the peer went away, when known (e.g. a process exit code and stderr tail)."""
        ...
