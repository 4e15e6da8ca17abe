"""The WebSocket profile's message path when the server offers its socket (`DirectSocket`,
from `serve_remote`'s protocol): the connection's reader gets each message without ASGI's
queue, and what the agent says is framed and written without ASGI's `send`.

`DirectChannel.receive` is an ASGI `receive` for the reader (`_websocket._read`), except
that text messages come as the bytes the socket's callback got (not decoded to be encoded
again); everything else (the disconnect) comes from ASGI as ASGI messages. While the
reader waits with nothing queued, a text message is first offered to `relay`, which
passes a usual one to the agent at once (no task woken); what it declines is queued.
`DirectChannel.pump` replaces the sending task: whenever frames wait in the connection's
stream, they are written in one write, while the socket takes them (when it does not, they
stay in the stream, whose size pauses the agent): at once when the connection has routed
all it got from the agent in one go, else on the next turn of the loop.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from acpstack._tasks import cancel_and_wait
from acpstack.server._asgi import Message, Receive, Scope
from acpstack.server._streams import OutboundStream
from acpstack.server._ws_protocol import DIRECT_EXTENSION, DirectSocket

# Past this many messages read and not yet taken by the reader, the socket is not read
# (the reader is waiting for the agent to take its input): TCP then slows the client down.
MAX_WAITING = 64


def direct_socket(scope: Scope) -> DirectSocket | None:
    """The socket the server offers for this WebSocket, if it does."""
    found: DirectSocket | None = scope.get("extensions", {}).get(DIRECT_EXTENSION)
    return found


class DirectChannel:
    def __init__(
        self,
        socket: DirectSocket,
        receive: Receive,
        stream: OutboundStream,
        receiver: int,
        relay: Callable[[bytes], bool] = lambda data: False,
    ) -> None:
        self._socket = socket
        self._relay = relay
        self._asgi_receive = receive
        self._stream = stream
        self._receiver = receiver  # our claim on the stream (another socket may resume it)
        self._messages: deque[Message | bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._lifecycle: asyncio.Task[None] | None = None
        self._flush_soon = False
        self._pumped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        socket.take_over(self._on_text, self._writable)

    # -- from the client -------------------------------------------------------------

    def _on_text(self, data: bytes) -> None:  # valid UTF-8 (the socket checked it)
        waiter = self._waiter
        if waiter is not None and not waiter.done() and not self._messages and self._relay(data):
            return  # the reader is idle and every message before this one was handled
        self._put(data)

    def _put(self, message: Message | bytes) -> None:
        self._messages.append(message)
        if len(self._messages) > MAX_WAITING and not self._paused:
            self._paused = True
            self._socket.pause_reading()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _watch_asgi(self) -> None:
        """What ASGI still delivers (the disconnect, binary messages), in the same queue."""
        while True:
            message = await self._asgi_receive()
            self._put(message)
            if message["type"] == "websocket.disconnect":
                return

    async def receive(self) -> Message | bytes:
        if self._lifecycle is None:
            # Owner: this channel; ends at the disconnect, or is cancelled with the reader.
            self._lifecycle = asyncio.ensure_future(self._watch_asgi())
        while not self._messages:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            except asyncio.CancelledError:
                self._lifecycle.cancel()
                raise
            finally:
                self._waiter = None
        if self._paused and len(self._messages) <= MAX_WAITING // 2:
            self._paused = False
            self._socket.resume_reading()
        return self._messages.popleft()

    # -- to the client ---------------------------------------------------------------

    async def pump(self) -> None:
        """Until the stream closes (or the socket does), send what the agent says."""
        self._stream.listen(self._on_stream)
        self._flush()
        try:
            await self._pumped
        finally:
            self._stream.unlisten(self._on_stream)
            if self._lifecycle is not None:
                await cancel_and_wait(self._lifecycle)

    def _on_stream(self, now: bool) -> None:
        if now:  # the connection routed a whole batch from the agent: one write for it
            self._flush()
        else:
            self._schedule_flush()

    def _writable(self) -> None:
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        # one flush for all the frames pushed in this turn of the loop: one write for them
        if not self._flush_soon and not self._pumped.done():
            self._flush_soon = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_soon = False
        if self._pumped.done():
            return
        if not self._stream.current(self._receiver):
            self._pumped.set_result(None)  # resumed on another socket: this one is done
            return
        if self._socket.can_write():
            _first, frames = self._stream.take()
            if frames and not self._socket.send_texts(frames):
                self._pumped.set_result(None)
                return
        if self._stream.closed and self._stream.empty:
            self._pumped.set_result(None)
