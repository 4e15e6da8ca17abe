"""What remote client transports share, and the base of the HTTP one.

The runtime writes NDJSON frames; streamable HTTP carries one JSON-RPC message per POST.
So `MessageTransport` splits writes into messages and queues them for one sender task,
which sends them in order, and hands every received message to the runtime as one NDJSON
line. (The WebSocket transport writes frames straight from `write`, so it needs no task.)
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._plumbing import Inbox
from acpstack.wire import FrameDecoder

log = logging.getLogger("acpstack.remote")

SEND_HIGH_WATER = 1024 * 1024


class RemoteError(ConnectionError):
    """The remote endpoint refused us or could not be reached; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class MessageTransport:
    """A Transport whose far end exchanges whole messages. Subclasses implement `_send_one`
    (called in order, one at a time, from the sender task) and `_start_receiving`."""

    def __init__(self, max_message_size: int) -> None:
        self._max_message_size = max_message_size
        self._inbox = Inbox()
        self._frames = FrameDecoder(max_message_size, "ndjson")
        self._outbox: deque[bytes] = deque()
        self._outbox_size = 0
        self._outbox_ready = asyncio.Event()
        self._reading = asyncio.Event()
        self._reading.set()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._finished = False
        self._closing = False
        self._reason: str | None = None

    # -- the Transport interface -----------------------------------------------------

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        self._inbox.attach(on_data, on_eof)
        self._spawn(self._send_loop())
        self._start_receiving()

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def write(self, data: bytes) -> None:
        if self._finished:
            return
        for frame in self._frames.feed(data):
            if isinstance(frame, bytes):
                self._outbox.append(frame)
                self._outbox_size += len(frame)
            else:  # our own runtime never writes these
                log.warning("dropped an outgoing frame: %r", frame)
        self._outbox_ready.set()

    async def drain(self) -> None:
        if self._outbox_size <= SEND_HIGH_WATER or self._finished:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def write_buffer_size(self) -> int:
        return self._outbox_size

    async def settle(self) -> None:
        return None

    def close_reason(self) -> str | None:
        return self._reason

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        await self._shutdown()
        self._finish(None)
        await self._stop_tasks()

    # -- for subclasses ----------------------------------------------------------------

    def _start_receiving(self) -> None:
        raise NotImplementedError

    async def _send_one(self, message: bytes) -> None:
        raise NotImplementedError

    async def _shutdown(self) -> None:
        """Say goodbye to the server (e.g. DELETE the connection); errors are ignored."""

    def _spawn(self, coro: object) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _deliver(self, messages: list[bytes]) -> None:
        if messages and not self._finished:
            self._inbox.data(b"\n".join(messages) + b"\n")

    async def _wait_reading(self) -> None:
        if not self._reading.is_set():
            await self._reading.wait()

    def _finish(self, reason: str | None) -> None:
        """The connection is over: no more input (the runtime fails what is pending with `reason`)."""
        if self._finished:
            return
        self._finished = True
        if reason is not None:
            self._reason = reason
            log.debug("remote connection ended: %s", reason)
        self._outbox.clear()
        self._outbox_size = 0
        self._wake_drainers()
        self._outbox_ready.set()
        self._inbox.eof()

    async def _stop_tasks(self) -> None:
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except asyncio.CancelledError:
                if current is not None and current.cancelling():
                    raise  # we are cancelled ourselves, not just the task we waited for
            except Exception:
                pass

    def _wake_drainers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _send_loop(self) -> None:
        while not self._finished:
            if not self._outbox:
                self._outbox_ready.clear()
                await self._outbox_ready.wait()
                continue
            message = self._outbox.popleft()
            self._outbox_size -= len(message)
            if self._outbox_size <= SEND_HIGH_WATER // 2:
                self._wake_drainers()
            await self._send_one(message)


CONNECTION_HEADER = "Acp-Connection-Id"
# `error.data.reason` of a request that failed because the connection (or the stream its
# answer was to come on) broke while it was in flight: its fate is unknown.
CONNECTION_LOST = "connection_lost"
SESSION_HEADER = "Acp-Session-Id"
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
