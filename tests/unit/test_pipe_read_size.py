"""The stdlib loop's pipe transports read in chunks small enough to come from the heap (a
256 KiB read buffer is a fresh mmap per read in glibc), and what is larger still arrives
whole, over several reads."""

from __future__ import annotations

import asyncio
import sys

from acpstack._reads import HEAP_READ_SIZE
from acpstack.transports import SubprocessTransport

SIZE = 3 * HEAP_READ_SIZE + 17  # more than one read can take
WRITER = f"import sys; sys.stdout.buffer.write(b'x' * {SIZE} + b'\\n'); sys.stdout.flush()"


async def test_a_subprocess_pipe_reads_heap_sized_chunks_and_delivers_everything() -> None:
    transport = await SubprocessTransport.spawn([sys.executable, "-c", WRITER])
    chunks: list[bytes] = []
    ended = asyncio.Event()
    transport.start_reading(chunks.append, ended.set)
    try:
        await asyncio.wait_for(ended.wait(), 30)
    finally:
        await transport.close()
    # (the stdlib's pipe transport: this test runs on the stdlib loop)
    assert transport._stdout.max_size == HEAP_READ_SIZE  # type: ignore[attr-defined]
    assert max(len(c) for c in chunks) <= HEAP_READ_SIZE
    assert b"".join(chunks) == b"x" * SIZE + b"\n"
