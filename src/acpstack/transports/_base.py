"""What the runtime needs from a byte pipe."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias

DataCallback: TypeAlias = Callable[[bytes], None]
"""Receives a chunk of incoming bytes. Chunks follow the pipe, not the messages: one may
hold several messages or part of one."""

EofCallback: TypeAlias = Callable[[], None]
"""Called once when no more bytes will arrive."""


class Transport(Protocol):
    """A bidirectional byte stream carrying ACP frames.

    Reading is push-based: the transport calls `on_data` from the event loop as soon as
    bytes arrive (no task wake-up in between, which is most of a round trip's cost).
    Writing never blocks; `drain` is the backpressure. Every method is called on the
    event loop's thread, and none is thread-safe.

    The runtime (`acpstack.rpc.Connection`) owns the transport it is given: it starts
    reading, and closes the transport in `Connection.aclose`.
    """

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver incoming bytes to `on_data` from now on (bytes that came earlier first),
        then call `on_eof` once when the peer closed its side. Both run on the event
        loop's thread. Whether `on_eof` also comes after our own `close` depends on the
        transport: do not rely on it. Called once; a second call raises `RuntimeError`."""
        ...

    def pause_reading(self) -> None:
        """Stop delivering bytes until `resume_reading` (backpressure)."""
        ...

    def resume_reading(self) -> None:
        """Deliver bytes again after `pause_reading`; what arrived meanwhile comes first.
        Calling it while reading is not paused does nothing."""
        ...

    def write(self, data: bytes) -> None:
        """Queue bytes for sending, in order (never blocks; use `drain` for backpressure).

        Bytes written after `close`, or after the peer went away, are dropped silently:
        the runtime learns of the end through `on_eof`."""
        ...

    async def drain(self) -> None:
        """Wait until the write buffer is below its high-water mark (at once when it is,
        or when the transport is closed)."""
        ...

    def write_buffer_size(self) -> int:
        """How many written bytes are queued and not yet handed to the operating system
        (or to the peer); the runtime drains when this grows large."""
        ...

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
