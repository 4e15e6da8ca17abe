"""Reading and writing descriptors the event loop cannot watch: regular files, /dev/null.

epoll refuses them (asyncio raises, uvloop aborts the process), and they never make a
reader wait for a peer: a read returns data or end of file at once. So reads run on a
thread of their own (one chunk in flight, so pausing works and memory stays bounded),
and writes are plain blocking writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading

from acpstack._reads import HEAP_READ_SIZE
from acpstack.transports._plumbing import Inbox

log = logging.getLogger("acpstack.transport")

READ_CHUNK = HEAP_READ_SIZE  # (a 256 KiB read buffer costs an mmap per read: _plumbing)


class ThreadReader:
    """Reads `fd` on a daemon thread and hands each chunk to `inbox` on the event loop.

    The thread reads the next chunk only after the loop delivered the previous one and
    reading is not paused. It owns `fd` and closes it when it stops.
    """

    def __init__(self, fd: int, inbox: Inbox, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = fd
        self._inbox = inbox
        self._loop = loop
        self._go = threading.Event()  # set: the thread may read the next chunk
        self._paused = False
        self._held = False  # a chunk was delivered while paused: resume lets the thread go on
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._go.set()
            self._thread = threading.Thread(target=self._run, name="acpstack-stdin", daemon=True)
            self._thread.start()

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        if self._held:
            self._held = False
            self._go.set()

    def close(self) -> None:
        self._closed = True
        self._go.set()  # a thread waiting for its turn wakes and stops
        if self._thread is None:
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def _run(self) -> None:
        try:
            while True:
                self._go.wait()
                if self._closed:
                    return
                try:
                    data = os.read(self._fd, READ_CHUNK)
                except OSError as exc:
                    log.warning("reading stdin failed: %s", exc)
                    data = b""
                self._go.clear()
                try:
                    self._loop.call_soon_threadsafe(self._deliver, data)
                except RuntimeError:  # the loop is closed: nobody is listening any more
                    return
                if not data:
                    return
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def _deliver(self, data: bytes) -> None:
        if self._closed:
            return
        if not data:
            self._inbox.eof()
            return
        self._inbox.data(data)
        if self._paused:
            self._held = True
        else:
            self._go.set()


class BlockingWriter:
    """Writes everything at once with blocking writes; after an error, drops what follows."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False
        self._failed = False

    def write(self, data: bytes) -> None:
        if self._closed or self._failed:
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except OSError as exc:
                self._failed = True
                log.warning("writing stdout failed, dropping further output: %s", exc)
                return
            view = view[written:]

    def buffer_size(self) -> int:
        return 0

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self._closed

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self._fd)
