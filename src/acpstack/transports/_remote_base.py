"""What remote client transports share, and the base of the HTTP one.

The runtime writes NDJSON frames; streamable HTTP carries one JSON-RPC message per POST.
So `MessageTransport` splits writes into messages and queues them, and hands every
received message to the runtime as one NDJSON line. Messages go out in *lanes*
(`_lane_of`: for HTTP, the session a message is about): in order within a lane, side by
side across lanes, so that a failover's many `session/resume` do not wait for one
another while a session's own messages keep their order. (The WebSocket transport writes frames straight from `write`, so it needs no task.)
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Coroutine
from typing import Any

from acpstack._tasks import cancel_and_wait
from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._plumbing import Inbox
from acpstack.wire import FrameDecoder

log = logging.getLogger("acpstack.remote")

SEND_HIGH_WATER = 1024 * 1024


class RemoteError(ConnectionError):
    """The remote endpoint refused us or could not be reached; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status: int | None = status
        """The HTTP status of the refusal; None when the server was not reached."""


class MessageTransport:
    """A Transport whose far end exchanges whole messages. Subclasses implement `_send_one`
    (called in order, one at a time, for the messages of one lane; lanes run side by side)
    and `_start_receiving`, and may implement `_lane_of`.

    The transport owns its tasks: `start_reading` starts the sender, `close` cancels and
    awaits every task it started. When the connection ends for any reason, the runtime
    gets `on_eof`; when the far end ended it, `close_reason` says why.
    """

    def __init__(self, max_message_size: int) -> None:
        self._max_message_size = max_message_size
        self._inbox = Inbox()
        self._frames = FrameDecoder(max_message_size, "ndjson")
        self._outbox: deque[bytes] = deque()
        self._outbox_size = 0  # bytes written and not sent yet (in the outbox or a lane)
        self._lanes: dict[object, deque[bytes]] = {}  # each lane's messages, in order
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
        """Start the connection's work: the sender task, and receiving. Every message
        received reaches `on_data` as one NDJSON line; `on_eof` comes once when the
        connection ended (also after `close`). Raises `RuntimeError` when called twice."""
        self._inbox.attach(on_data, on_eof)
        self._spawn(self._send_loop())
        self._start_receiving()

    def pause_reading(self) -> None:
        """Stop taking messages off the server's streams until `resume_reading` (answers
        to POSTs and locally made errors may still arrive)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        """Take messages off the streams again after `pause_reading`."""
        self._reading.set()

    def write(self, data: bytes) -> None:
        """Split `data` (NDJSON, possibly several or partial lines) into messages and
        queue them; the sender task sends them one at a time, in order. Dropped once the
        connection ended."""
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
        """Wait while more than 1 MiB of messages waits to be sent (until the sender is
        down to half of that, or the connection ended)."""
        if self._outbox_size <= SEND_HIGH_WATER or self._finished:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def write_buffer_size(self) -> int:
        """Bytes of messages queued and not yet handed to the sender."""
        return self._outbox_size

    async def settle(self) -> None:
        """Nothing to wait for: the reason is known when the connection ends."""
        return None

    def close_reason(self) -> str | None:
        """Why the connection ended (e.g. an HTTP status, a failed stream); None while it
        is open, or when it was closed locally first."""
        return self._reason

    async def close(self) -> None:
        """Say goodbye to the server (errors ignored), drop what was not sent yet, end the
        input and cancel and await every task of the transport. Idempotent."""
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

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._closing:
            # A stream a message asked for while closing: started now, it would outlive
            # `close` (and its socket with it).
            coro.close()
            return
        # Owner: this transport; `_stop_tasks` ends every task it started.
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _deliver(self, messages: list[bytes]) -> None:
        if messages:
            self._deliver_lines(b"\n".join(messages) + b"\n")

    def _deliver_lines(self, lines: bytes) -> None:
        """Hand NDJSON lines (each ending in LF) to the runtime, unless the connection is over."""
        if lines and not self._finished:
            self._inbox.data(lines)

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
        # Again until none is left: a task may have started another before it was cancelled.
        while tasks := [t for t in self._tasks if t is not current and not t.done()]:
            await cancel_and_wait(*tasks)

    def _wake_drainers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _lane_of(self, message: bytes) -> object:
        """The lane of `message`: messages of one lane are sent in order (default: one
        lane for all)."""
        return None

    async def _send_loop(self) -> None:
        while not self._finished:
            if not self._outbox:
                self._outbox_ready.clear()
                await self._outbox_ready.wait()
                continue
            message = self._outbox.popleft()
            lane = self._lane_of(message)
            queue = self._lanes.get(lane)
            if queue is not None:
                queue.append(message)  # its sender sends it after those before it
            else:
                self._lanes[lane] = deque([message])
                self._spawn(self._send_lane(lane))

    async def _send_lane(self, lane: object) -> None:
        queue = self._lanes[lane]
        try:
            while queue and not self._finished:
                message = queue[0]
                await self._send_one(message)
                queue.popleft()
                self._outbox_size -= len(message)
                if self._outbox_size <= SEND_HIGH_WATER // 2:
                    self._wake_drainers()
        finally:
            if self._lanes.get(lane) is queue:
                del self._lanes[lane]


CONNECTION_HEADER = "Acp-Connection-Id"
"""The HTTP header that names a remote connection: the server sets it in its answer to
`initialize` (or to the WebSocket handshake), the client sends it on every later request."""
CONNECTION_LOST = "connection_lost"
"""`error.data.reason` of a request that failed because the connection (or the stream its
answer was to come on) broke while it was in flight: its fate is unknown."""
SESSION_HEADER = "Acp-Session-Id"
"""The HTTP header that names the session a request or stream belongs to."""
RESUMABLE_HEADER = "Acp-Resumable"
"""Set to "1" in a server's answer to `initialize` (HTTP) or to the handshake (WebSocket):
its streams are numbered and a broken connection may be resumed (docs/remote.md)."""
LAST_EVENT_HEADER = "Last-Event-ID"
"""Resuming: the position of the last message the client has on the stream it opens
again (an SSE event id; over WebSocket, the count of messages received)."""
RECEIVED_HEADER = "Acp-Received"
"""In the answer to a WebSocket resume: how many messages of the client's the server
had received; the client sends the later ones again."""
RETRY_HEADER = "Acp-Retry"
"""Set to "1" on a POST sent again after a broken connection: a request or answer whose
id already arrived is dropped by the server."""
ONE_STREAM_HEADER = "Acp-One-Stream"
"""An acpstack extension of streamable HTTP: "1" on a client's `initialize` asks the server
to send every message of the connection, whatever its session, on the connection's one
event stream (as over WebSocket) instead of a stream per session; the server's answer
says "1" when it does. A failover then opens one stream, not one per session."""
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
