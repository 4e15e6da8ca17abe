"""The client side of remote ACP over WebSocket: one JSON-RPC message per text frame.

Built on the sans-IO protocol of the `websockets` library over an asyncio Protocol, so it
is push-based like the stdio transports: the frames of one TCP read reach the runtime
in one call, and a write sends its frames at once (no reader or sender task).

The handshake answer carries `Acp-Connection-Id`; the first message must be `initialize`
(the runtime sends it first anyway). Binary frames are ignored, as the RFD says. Cookies
set by the handshake are kept in the jar (pass your own to keep them across reconnects).
The server's pings are answered; a message over `max_message_size` ends the connection.

Resuming: when a server that says `Acp-Resumable: 1` is lost without a close frame (the
network broke, a proxy reset the connection), the transport opens a new socket to the
same connection (`Acp-Connection-Id`, `Last-Event-ID`: how many messages it received),
sends again what the server says it did not receive (`Acp-Received`), and goes on: the
runtime sees nothing, its requests in flight get their answers. Only when the server no
longer knows the connection (it died or forgot it) or `resume_timeout` passes does the
connection end, and with `reconnect=True` failover takes over (docs/remote.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import Mapping
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urlsplit

from acpstack._reads import read_in_heap_sized_chunks
from acpstack._tasks import cancel_and_wait
from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._cookies import cookie_header, store_cookies
from acpstack.transports._envelope import single_line
from acpstack.transports._extras import require_extra
from acpstack.transports._plumbing import Inbox, WriteFlow
from acpstack.transports._remote_base import (
    CONNECTION_HEADER,
    LAST_EVENT_HEADER,
    RECEIVED_HEADER,
    RESUMABLE_HEADER,
    RemoteError,
)
from acpstack.transports._ws_frames import RawFrame, WebSocketFrames
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder

log = logging.getLogger("acpstack.remote")

# what is kept of the messages sent, to send again after a resume
SENT_KEPT_BYTES = 4 * 1024 * 1024
# a resume answered with these is refused for good: the connection is gone (502-504: a
# load balancer lost the server that held it)
FINAL_STATUSES = frozenset({400, 401, 403, 404, 410, 502, 503, 504})


class _Pipe(WriteFlow, asyncio.Protocol):
    def __init__(self, owner: WebSocketClientTransport) -> None:
        super().__init__()
        self.owner = owner

    def data_received(self, data: bytes) -> None:
        if self.owner._pipe is self:
            self.owner._bytes_received(data)

    def eof_received(self) -> bool:
        if self.owner._pipe is self:
            self.owner._eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.owner._pipe is self:
            self.owner._eof_received()


class WebSocketClientTransport:
    """A Transport to a remote ACP agent at `url` (ws:// or wss://). Call `connect()` first.

    Each JSON-RPC message is one text frame, both ways (the module doc has the details).
    The connection ends when the server closes the WebSocket or the TCP connection, or
    sends a message over `max_message_size`; `close_reason` says which.

    Args:
        url: The agent's endpoint.
        headers: Extra headers sent with the handshake.
        token: Sent as `Authorization: Bearer <token>` (never logged).
        cookies: The cookie jar; pass your own to keep cookies across reconnects.
        ssl_context: TLS settings for wss:// (default: the system's CAs).
        compression: Offer permessage-deflate.
        timeout: Seconds `connect` may take (TCP, TLS and the handshake).
        max_message_size: The largest message accepted from the server, in bytes.
        resume_timeout: How long to keep trying to resume a connection that broke (when
            the server can resume); 0 never tries.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        cookies: CookieJar | None = None,
        ssl_context: ssl.SSLContext | None = None,
        compression: bool = False,
        timeout: float = 30.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        resume_timeout: float = 15.0,
    ) -> None:
        self.url = url
        """The agent's endpoint, as given."""
        self._headers = dict(headers or {})
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self.cookies: CookieJar = cookies if cookies is not None else CookieJar()
        """The cookie jar in use."""
        self._ssl = ssl_context
        self._compression = compression
        self._timeout = timeout
        self._max = max_message_size
        self._inbox = Inbox()
        self._frames = FrameDecoder(max_message_size, "ndjson")
        self._ws: Any = None
        self._open_state: Any = None  # websockets' State.OPEN and CLOSED (with the protocol)
        self._closed_state: Any = None
        self._pipe: _Pipe | None = None
        self._transport: asyncio.Transport | None = None
        self._handshake: asyncio.Future[Any] | None = None
        self._partial: list[bytes] | None = None  # a fragmented text message being assembled
        self._partial_size = 0
        self._fast: WebSocketFrames | None = None  # whole text frames, without `websockets`
        self._ended = False
        self._reason: str | None = None
        self.connection_id: str | None = None
        """The server's `Acp-Connection-Id` from the handshake (None before `connect`, or when the
        server sent none)."""
        self.resume_timeout = resume_timeout
        self.resumable: bool = False
        """Whether the server said it can resume this connection (`Acp-Resumable: 1`)."""
        self.resumes: int = 0
        """How many times the connection broke and was resumed."""
        self._received = 0  # text messages taken from the server
        self._sent: deque[bytes] = deque()  # the last messages sent, kept for a resume
        self._sent_size = 0
        self._sent_count = 0  # every text message sent so far
        self._paused = False
        self._closing = False
        self._resuming: asyncio.Task[None] | None = None
        self._resumed = asyncio.Event()
        self._resumed.set()

    async def connect(self) -> None:
        """Open the WebSocket: TCP (and TLS for wss://), then the handshake, within
        `timeout` seconds. Cookies the handshake sets go into `cookies`.

        Raises:
            RemoteError: The server could not be reached in time, or refused the
                handshake (`status` is its HTTP status then).
            MissingExtraError: The `remote` extra (websockets) is not installed.
        """
        response = await self._open({})
        self.connection_id = response.headers.get(CONNECTION_HEADER)
        self.resumable = response.headers.get(RESUMABLE_HEADER) == "1"

    async def _open(self, extra: Mapping[str, str]) -> Any:
        """A new socket and handshake (its answer); it becomes the transport's socket."""
        ws = self._protocol()
        request = ws.connect()
        for name, value in {**self._headers, **extra}.items():
            request.headers[name] = value
        cookie = cookie_header(self.cookies, self.url)
        if cookie:
            request.headers["Cookie"] = cookie
        ws.send_request(request)
        self._ws, self._pipe, self._transport = ws, None, None
        self._fast = None  # the handshake's answer goes through `websockets`
        parts = urlsplit(self.url)
        secure = parts.scheme == "wss"
        context = self._ssl or (ssl.create_default_context() if secure else None)
        loop = asyncio.get_running_loop()
        self._handshake = loop.create_future()
        try:
            async with asyncio.timeout(self._timeout):
                transport, pipe = await loop.create_connection(
                    lambda: _Pipe(self),
                    parts.hostname or "",
                    parts.port or (443 if secure else 80),
                    ssl=context,
                    server_hostname=parts.hostname if context else None,
                )
                self._transport, self._pipe = transport, pipe
                read_in_heap_sized_chunks(transport)
                self._flush()
                response = await self._handshake
        except (OSError, TimeoutError) as exc:
            self._abort()
            raise RemoteError(f"could not open a WebSocket to {self.url}: {exc!r}") from None
        if ws.handshake_exc is not None or response.status_code != 101:
            self._abort()
            body = (response.body or b"").decode("utf-8", "replace")[:500].strip()
            raise RemoteError(
                f"the server refused the WebSocket: HTTP {response.status_code}"
                + (f": {body}" if body else ""),
                response.status_code,
            )
        store_cookies(self.cookies, self.url, response.headers.get_all("Set-Cookie"))
        # `websockets` is between frames: split them from here (cheaper than its parser)
        self._fast = (
            WebSocketFrames(client=True, max_size=self._max) if not ws.reader.buffer else None
        )
        return response

    def _protocol(self) -> Any:
        client: Any = require_extra("websockets.client")
        uri: Any = require_extra("websockets.uri")
        extensions = None
        if self._compression:
            deflate: Any = require_extra("websockets.extensions.permessage_deflate")
            extensions = [deflate.ClientPerMessageDeflateFactory()]
        state: Any = require_extra("websockets.protocol").State
        # compared by identity on every message (an enum's `name` is a slow property)
        self._open_state, self._closed_state = state.OPEN, state.CLOSED
        return client.ClientProtocol(
            uri.parse_uri(self.url), extensions=extensions, max_size=self._max
        )

    # -- bytes in ----------------------------------------------------------------------

    def _bytes_received(self, data: bytes) -> None:
        ws = self._ws
        messages: list[bytes] = []
        if self._fast is None:
            ws.receive_data(data)
            self._events(messages)
        else:
            for frame in self._fast.split(data):
                if type(frame) is RawFrame:
                    ws.receive_data(frame)
                    self._events(messages)
                else:
                    messages.append(single_line(frame))
        self._flush()  # pongs, the reply to a close
        if messages:
            self._received += len(messages)
            if len(messages) == 1:  # the usual read: one copy, not a join and a copy
                self._inbox.data(messages[0] + b"\n")
            else:
                self._inbox.data(b"\n".join(messages) + b"\n")
        if ws.close_rcvd is not None or ws.state is self._closed_state:
            self._lost(f"the WebSocket closed ({_close_text(ws)})")

    def _events(self, messages: list[bytes]) -> None:
        for event in self._ws.events_received():
            if self._handshake is not None and not self._handshake.done():
                self._handshake.set_result(event)
                continue
            self._frame(event, messages)

    def _frame(self, frame: Any, out: list[bytes]) -> None:
        opcode = frame.opcode.name
        if opcode == "TEXT":
            if frame.fin:
                out.append(single_line(bytes(frame.data)))
            else:
                self._partial, self._partial_size = [bytes(frame.data)], len(frame.data)
        elif opcode == "CONT" and self._partial is not None:
            self._partial.append(bytes(frame.data))
            self._partial_size += len(frame.data)
            if self._partial_size > self._max:
                self._partial = None
                self._ws.fail(1009, "message too big")
            elif frame.fin:
                out.append(single_line(b"".join(self._partial)))
                self._partial = None
        elif opcode == "BINARY" or opcode == "CONT":
            self._partial = None  # binary messages are ignored (RFD)

    def _eof_received(self) -> None:
        if self._ws is not None and self._ws.state.name != "CLOSED":
            with contextlib.suppress(Exception):
                self._ws.receive_eof()
        if self._handshake is not None and not self._handshake.done():
            self._handshake.set_exception(
                ConnectionResetError("the server closed the connection during the handshake")
            )
            return
        self._lost(f"the WebSocket closed ({_close_text(self._ws)})")

    def _lost(self, reason: str) -> None:
        """The socket ended: resume when the server can and did not close it on purpose."""
        if self._ended or self._resuming is not None:
            return
        if (
            self._closing
            or not self.resumable
            or self.resume_timeout <= 0
            or getattr(self._ws, "close_rcvd", None) is not None
        ):
            self._end(reason)
            return
        log.info("the WebSocket broke (%s); resuming", reason)
        if self._transport is not None:
            self._transport.close()
        self._resumed.clear()
        # Owner: this transport; `close` cancels it.
        self._resuming = asyncio.get_running_loop().create_task(self._resume(reason))

    async def _resume(self, reason: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.resume_timeout
        delay = 0.05
        try:
            while True:
                try:
                    response = await self._open(
                        {
                            CONNECTION_HEADER: self.connection_id or "",
                            LAST_EVENT_HEADER: str(self._received),
                        }
                    )
                    break
                except RemoteError as exc:
                    reason = str(exc)
                    # nobody listens on that port any more: the server is gone
                    refused = exc.status is None and "ConnectionRefusedError" in reason
                    if exc.status in FINAL_STATUSES or refused:
                        self._end(f"the connection could not be resumed: {reason}")
                        return
                if loop.time() + delay > deadline:
                    self._end(f"the connection could not be resumed in time: {reason}")
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            self._resend(int(response.headers.get(RECEIVED_HEADER, "-1")))
        finally:
            self._resuming = None
            self._resumed.set()

    def _resend(self, received: int) -> None:
        """Send again the messages after the `received` first ones."""
        first = self._sent_count - len(self._sent) + 1  # the number of _sent[0]
        if received < first - 1 or received > self._sent_count:
            self._end(
                f"the connection could not be resumed: the server received {received} of our "
                f"messages, and we keep messages {first} to {self._sent_count}"
            )
            return
        self.resumes += 1
        if self._paused and self._transport is not None:
            self._transport.pause_reading()
        for frame in list(self._sent)[received - first + 1 :]:
            self._ws.send_text(frame)
        self._flush()
        log.info("the WebSocket was resumed (%d messages sent again)", self._sent_count - received)

    def _end(self, reason: str) -> None:
        if not self._ended:
            self._ended = True
            self._reason = reason
            if self._transport is not None:
                self._transport.close()
            self._inbox.eof()

    # -- the Transport interface -------------------------------------------------------

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver every text message as one NDJSON line to `on_data` (the messages of one
        TCP read in one call; what came since `connect` first), then call `on_eof` once
        when the connection ended (also after `close`). Raises `RuntimeError` before
        `connect`, or when called twice."""
        if self._ws is None:
            raise RuntimeError("call connect() before using the transport")
        self._inbox.attach(on_data, on_eof)

    def pause_reading(self) -> None:
        """Stop reading the socket until `resume_reading` (TCP pushes back on the server;
        its pings wait too)."""
        self._paused = True
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        """Read the socket again after `pause_reading`."""
        self._paused = False
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def write(self, data: bytes) -> None:
        """Send each complete NDJSON line in `data` as a text frame, at once and in order
        (a partial line waits for its end). Dropped before `connect` and once the
        connection ended."""
        if self._ended or self._ws is None:
            return
        frames = self._frames
        if frames.whole_line(data) and data[-2] != 13 and not data.isspace():
            lines = [data[:-1]]  # the usual write: one message line (nothing to split)
        else:
            lines = [frame for frame in frames.feed(data) if isinstance(frame, bytes)]
        for line in lines:
            self._keep(line)
        if self._resuming is not None:
            return  # they go with the others once resumed
        ws = self._ws
        if self._fast is not None and not ws.extensions and ws.state is self._open_state:
            if lines and self._transport is not None and not self._transport.is_closing():
                self._transport.write(self._fast.text_frames(lines))
            return
        for line in lines:
            ws.send_text(line)
        self._flush()

    def _keep(self, frame: bytes) -> None:
        self._sent_count += 1
        if not self.resumable:
            return
        self._sent.append(frame)
        self._sent_size += len(frame)
        while self._sent_size > SENT_KEPT_BYTES and len(self._sent) > 1:
            self._sent_size -= len(self._sent.popleft())

    def _flush(self) -> None:
        out = self._ws.data_to_send()
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(out))

    async def drain(self) -> None:
        """Wait while the socket's write buffer is over its high-water mark (and while
        the connection is being resumed)."""
        if not self._resumed.is_set():
            await self._resumed.wait()
        if self._pipe is not None:
            await self._pipe.drain()

    def write_buffer_size(self) -> int:
        """Bytes in the socket's write buffer."""
        return self._transport.get_write_buffer_size() if self._transport is not None else 0

    async def settle(self) -> None:
        """Nothing to wait for: the reason is known when the connection ends."""
        return None

    def close_reason(self) -> str | None:
        """Why the connection ended: the server's close code and reason, or "closed
        locally"; None while it is open."""
        return self._reason

    async def close(self) -> None:
        """Send a close frame (code 1000) and wait up to about two seconds for the server
        to close the connection, then close the socket. Idempotent; does nothing before
        `connect`."""
        self._closing = True
        resuming, self._resuming = self._resuming, None
        if resuming is not None:
            await cancel_and_wait(resuming)
        if self._ws is None:
            return
        if self._pipe is None:  # it broke and was not resumed yet
            self._end("closed locally")
            self._abort()
            return
        if not self._ended:
            with contextlib.suppress(Exception):
                self._ws.send_close(1000)
                self._flush()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._pipe.wait_closed(2.0)), 2.5)
        self._end("closed locally")
        self._abort()

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.close()


def _close_text(ws: Any) -> str:
    frame = getattr(ws, "close_rcvd", None) if ws is not None else None
    if frame is None:
        return "no close frame"
    return f"code {frame.code}" + (f": {frame.reason}" if frame.reason else "")
