"""Reading and writing a watchable descriptor with `add_reader` / `add_writer`.

For terminals, and for one socket that is both stdin and stdout. The loops' pipe
transports do not fit those: a pipe write transport also watches its descriptor for
reading (to notice that the reader went away), so bytes arriving on a terminal or on the
shared socket make asyncio close it and make uvloop fail. Here each side only does its
own direction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque

from acpstack._reads import HEAP_READ_SIZE
from acpstack.transports._plumbing import Inbox

log = logging.getLogger("acpstack.transport")

READ_CHUNK = HEAP_READ_SIZE  # (a 256 KiB read buffer costs an mmap per read: _plumbing)
WRITE_HIGH_WATER = 64 * 1024


class FdReader:
    """Delivers what `fd` receives to `inbox`; owns `fd`."""

    def __init__(self, fd: int, inbox: Inbox, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = fd
        self._inbox = inbox
        self._loop = loop
        self._watching = False
        self._paused = False
        self._done = False  # end of input seen, or closed

    def start(self) -> None:
        os.set_blocking(self._fd, False)
        self._watch(True)

    def pause(self) -> None:
        self._paused = True
        self._watch(False)

    def resume(self) -> None:
        self._paused = False
        self._watch(True)

    def close(self) -> None:
        if self._fd < 0:
            return
        self._done = True
        self._watch(False)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1

    def _watch(self, on: bool) -> None:
        if on and not self._watching and not self._paused and not self._done:
            self._loop.add_reader(self._fd, self._ready)
            self._watching = True
        elif not on and self._watching:
            self._loop.remove_reader(self._fd)
            self._watching = False

    def _ready(self) -> None:
        try:
            data = os.read(self._fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # e.g. EIO: the terminal hung up
            data = b""
        if data:
            self._inbox.data(data)
            return
        self._watch(False)
        self._done = True
        self._inbox.eof()


class FdWriter:
    """Writes at once when it can, buffers the rest until `fd` is writable; owns `fd`."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, name: str = "stdout") -> None:
        self._fd = fd
        self._loop = loop
        self._name = name  # what the descriptor is, for the log
        self._chunks: deque[memoryview] = deque()
        self._size = 0
        self._watching = False
        self._closing = False
        self._failed = False
        self._waiters: list[asyncio.Future[None]] = []
        self._flushed = asyncio.Event()
        self._flushed.set()
        os.set_blocking(fd, False)

    def write(self, data: bytes) -> None:
        if self._closing or self._failed or not data:
            return
        if self._chunks:  # in order, after what waits
            view = memoryview(data)
        else:
            try:
                written = os.write(self._fd, data)
            except (BlockingIOError, InterruptedError):
                written = 0
            except OSError as exc:
                self._fail(exc)
                return
            if written == len(data):  # the common case: the pipe took it all
                return
            view = memoryview(data)[written:]
            self._loop.add_writer(self._fd, self._ready)
            self._watching = True
            self._flushed.clear()
        self._chunks.append(view)
        self._size += len(view)

    def buffer_size(self) -> int:
        return self._size

    async def drain(self) -> None:
        if self._size <= WRITE_HIGH_WATER or self._failed:
            return
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append(waiter)
        await waiter

    def is_closing(self) -> bool:
        return self._closing

    async def close(self, timeout: float = 5.0) -> None:
        """Flush what is buffered (for at most `timeout` seconds), then close."""
        if self._closing:
            return
        self._closing = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._flushed.wait(), timeout)
        self._stop()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _ready(self) -> None:
        while self._chunks:
            first = self._chunks[0]
            try:
                written = os.write(self._fd, first)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._fail(exc)
                return
            self._size -= written
            if written < len(first):
                self._chunks[0] = first[written:]
                break
            self._chunks.popleft()
        if self._size <= WRITE_HIGH_WATER:
            self._wake()
        if not self._chunks:
            self._stop()

    def _fail(self, exc: OSError) -> None:
        log.warning("writing %s failed, dropping further output: %s", self._name, exc)
        self._failed = True
        self._chunks.clear()
        self._size = 0
        self._stop()

    def _stop(self) -> None:
        if self._watching:
            self._loop.remove_writer(self._fd)
            self._watching = False
        self._flushed.set()
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
