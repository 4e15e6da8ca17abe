"""`direct_io`: a child's stdin/stdout as OS pipes this process reads and writes itself
(`SubprocessTransport.spawn(direct_io=True)`), and this process's own stdin/stdout the same
way (`open_stdio_transport(direct_io=True)`), as the conductor runs them. Each behaviour
is checked in both modes, so the option changes the cost and nothing else."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from acpstack.transports import SubprocessTransport

pytestmark = pytest.mark.timeout(60)

PEERS = Path(__file__).parent / "peers"
ECHO = "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line); sys.stdout.flush()\n"
WAIT = 20


class Reader:
    """Collects what a transport delivers; `until(n)` waits for n bytes."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ended = asyncio.Event()
        self._grew = asyncio.Event()

    def on_data(self, data: bytes) -> None:
        self.data += data
        self._grew.set()

    async def until(self, size: int) -> bytes:
        async with asyncio.timeout(WAIT):
            while len(self.data) < size:
                self._grew.clear()
                await self._grew.wait()
        return bytes(self.data)


async def spawn(code: str, direct_io: bool, **options: object) -> SubprocessTransport:
    return await SubprocessTransport.spawn(
        [sys.executable, "-c", code],
        direct_io=direct_io,
        **options,  # type: ignore[arg-type]
    )


async def open_fds() -> set[str]:
    """This process's descriptors, once the event loop made what it makes for its first
    child (uvloop opens some of its own then)."""
    first = await SubprocessTransport.spawn([sys.executable, "-c", "pass"])
    await first.close()
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("direct_io", [False, True])
async def test_lines_go_both_ways_in_order_and_the_end_is_reported(direct_io: bool) -> None:
    before = await open_fds()
    transport = await spawn(ECHO, direct_io)
    reader = Reader()
    transport.start_reading(reader.on_data, reader.ended.set)
    lines = [f"line {i}\n".encode() for i in range(500)]
    for line in lines:
        transport.write(line)
    assert await reader.until(sum(map(len, lines))) == b"".join(lines)
    await transport.close()
    await asyncio.wait_for(reader.ended.wait(), WAIT)
    assert transport.returncode is not None
    assert set(os.listdir("/proc/self/fd")) <= before  # nothing of the child's left open


@pytest.mark.parametrize("direct_io", [False, True])
async def test_megabytes_to_a_slow_reader_arrive_whole_and_drain_waits(direct_io: bool) -> None:
    # The child sleeps before reading: the pipe fills, our side buffers and `drain` waits.
    code = "import sys, time\ntime.sleep(0.5)\n" + ECHO
    transport = await spawn(code, direct_io)
    reader = Reader()
    transport.start_reading(reader.on_data, reader.ended.set)
    payload = b"".join(f"{i:08d}{'x' * 1000}\n".encode() for i in range(4000))  # ~4 MB
    transport.write(payload)
    assert transport.write_buffer_size() > 0  # more than a pipe holds
    await asyncio.wait_for(transport.drain(), WAIT)
    assert await reader.until(len(payload)) == payload
    await transport.close()


@pytest.mark.parametrize("direct_io", [False, True])
async def test_pausing_stops_delivery_and_resuming_delivers_the_rest_in_order(
    direct_io: bool,
) -> None:
    size = 2_000_000
    code = f"import sys\nsys.stdout.buffer.write(b'y' * {size}); sys.stdout.flush()\n"
    transport = await spawn(code, direct_io)
    reader = Reader()
    paused = asyncio.Event()

    def on_data(data: bytes) -> None:
        reader.on_data(data)
        if not paused.is_set():
            paused.set()
            transport.pause_reading()

    transport.start_reading(on_data, reader.ended.set)
    await asyncio.wait_for(paused.wait(), WAIT)
    held = len(reader.data)
    # While paused nothing more is delivered (the child blocks on a full pipe): a few
    # loop turns with the child writing as fast as it can.
    for _ in range(20):
        await asyncio.sleep(0.01)
    assert len(reader.data) == held < size
    transport.resume_reading()
    assert await reader.until(size) == b"y" * size
    await asyncio.wait_for(reader.ended.wait(), WAIT)
    await transport.close()


@pytest.mark.parametrize("direct_io", [False, True])
async def test_writing_to_a_child_that_exited_is_dropped_and_the_reason_says_how(
    direct_io: bool,
) -> None:
    code = "import sys\nsys.stderr.write('bye now\\n'); sys.exit(3)\n"
    lines: list[str] = []
    transport = await spawn(code, direct_io, stderr_callback=lines.append)
    reader = Reader()
    transport.start_reading(reader.on_data, reader.ended.set)
    await asyncio.wait_for(reader.ended.wait(), WAIT)
    await asyncio.wait_for(transport.wait_exit(), WAIT)
    for _ in range(3):  # the pipe's reader is gone: dropped, never raised
        transport.write(b"x" * 100_000)
        await asyncio.sleep(0.01)
    await transport.settle()
    reason = transport.close_reason()
    assert reason is not None and "exited with code 3" in reason and "bye now" in reason
    assert lines == ["bye now"]
    await transport.close()


@pytest.mark.parametrize("direct_io", [False, True])
async def test_the_shutdown_ladder_still_kills_a_child_that_ignores_eof_and_sigterm(
    direct_io: bool,
) -> None:
    transport = await SubprocessTransport.spawn(
        [sys.executable, str(PEERS / "stubborn_agent.py")],
        shutdown_timeout=0.3,
        direct_io=direct_io,
    )
    reader = Reader()
    transport.start_reading(reader.on_data, reader.ended.set)
    assert await reader.until(6) == b"ready\n"
    pid = transport.pid
    await asyncio.wait_for(transport.close(), WAIT)
    assert transport.returncode == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def pipes_open() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                found.add(fd)
        except OSError:  # (the listing's own descriptor)
            pass
    return found


async def test_a_program_that_cannot_start_leaves_no_pipe_open() -> None:
    # (Pipes only: uvloop itself leaves the stderr socket pair of a failed spawn open.)
    await open_fds()
    before = pipes_open()
    with pytest.raises(FileNotFoundError):
        await SubprocessTransport.spawn(["/nonexistent/program"], direct_io=True)
    assert pipes_open() <= before


STDIO_ECHO = """
import asyncio, sys
from acpstack.transports import open_stdio_transport

async def main():
    transport = await open_stdio_transport(direct_io=True)
    done = asyncio.Event()
    transport.start_reading(transport.write, done.set)
    print("stray output goes to stderr")  # never onto the wire
    await done.wait()
    await transport.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("stdin_kind", ["pipe", "socket"])
async def test_stdio_direct_io_serves_pipes_and_sockets(stdin_kind: str) -> None:
    # A child that echoes with open_stdio_transport(direct_io=True); its stdio are pipes
    # (direct_io here) or socket pairs (the event loop's own spawning).
    transport = await SubprocessTransport.spawn(
        [sys.executable, "-c", STDIO_ECHO], direct_io=stdin_kind == "pipe"
    )
    reader = Reader()
    transport.start_reading(reader.on_data, reader.ended.set)
    frames = b"".join(json.dumps({"n": i}).encode() + b"\n" for i in range(2000))
    transport.write(frames)
    assert await reader.until(len(frames)) == frames
    await transport.close()
    await asyncio.wait_for(reader.ended.wait(), WAIT)
    assert transport.returncode == 0
    assert "stray output goes to stderr" in "\n".join(transport.stderr_tail())
