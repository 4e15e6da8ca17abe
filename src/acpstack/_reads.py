"""How much a stdlib transport reads at a time (the transports acpstack opens, and the
connections of `acpstack serve` on httptools, whose refusals of a body not read to its
end close with a linger so that the client gets the answer: `acpstack.server._linger`)."""

from __future__ import annotations

import contextlib

# The stdlib's pipe and socket transports read up to 256 KiB at a time. glibc serves an
# allocation of 128 KiB or more with a fresh mmap, so each read (one per message when
# messages come one at a time) maps, shrinks and unmaps memory: about half of a request
# round trip over pipes on the stdlib loop, measured (a 200-byte read from a pipe: 35 µs
# with a 256 KiB buffer, 2.3 µs with 64 KiB). Reads of 64 KiB come from the heap.
HEAP_READ_SIZE = 64 * 1024


def read_in_heap_sized_chunks(transport: object) -> None:
    """Make a stdlib read-pipe or socket transport read at most `HEAP_READ_SIZE` bytes at
    a time (uvloop's transports have no such setting, and need none: they read into a
    buffer of their own)."""
    if isinstance(getattr(transport, "max_size", None), int):
        with contextlib.suppress(AttributeError):
            transport.max_size = HEAP_READ_SIZE  # type: ignore[attr-defined]
