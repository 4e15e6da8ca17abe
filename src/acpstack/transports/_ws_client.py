"""The client side of remote ACP over WebSocket: one JSON-RPC message per text frame.

Built on the sans-IO protocol of the `websockets` library over an asyncio Protocol, so it
is push-based like the stdio transports: the frames of one TCP read reach the runtime
in one call, and a write sends its frames at once (no reader or sender task).

The handshake answer carries `Acp-Connection-Id`; the first message must be `initialize`
(the runtime sends it first anyway). Binary frames are ignored, as the RFD says. Cookies
set by the handshake are kept in the jar (pass your own to keep them across reconnects).
The server's pings are answered; a message over `max_message_size` ends the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Mapping
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urlsplit

from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._cookies import cookie_header, store_cookies
from acpstack.transports._envelope import single_line
from acpstack.transports._extras import require_extra
from acpstack.transports._plumbing import Inbox, WriteFlow
from acpstack.transports._remote_base import CONNECTION_HEADER, RemoteError
from acpstack.transports._ws_frames import RawFrame, WebSocketFrames
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder

log = logging.getLogger("acpstack.remote")


class _Pipe(WriteFlow, asyncio.Protocol):
    def __init__(self, owner: WebSocketClientTransport) -> None:
        super().__init__()
        self.owner = owner

    def data_received(self, data: bytes) -> None:
        self.owner._bytes_received(data)

    def eof_received(self) -> bool:
        self.owner._eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
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

    async def connect(self) -> None:
        """Open the WebSocket: TCP (and TLS for wss://), then the handshake, within
        `timeout` seconds. Cookies the handshake sets go into `cookies`.

        Raises:
            RemoteError: The server could not be reached in time, or refused the
                handshake (`status` is its HTTP status then).
            MissingExtraError: The `remote` extra (websockets) is not installed.
        """
        self._ws = self._protocol()
        request = self._ws.connect()
        for name, value in self._headers.items():
            request.headers[name] = value
        cookie = cookie_header(self.cookies, self.url)
        if cookie:
            request.headers["Cookie"] = cookie
        self._ws.send_request(request)
        parts = urlsplit(self.url)
        secure = parts.scheme == "wss"
        context = self._ssl or (ssl.create_default_context() if secure else None)
        loop = asyncio.get_running_loop()
        self._handshake = loop.create_future()
        try:
            async with asyncio.timeout(self._timeout):
                self._transport, self._pipe = await loop.create_connection(
                    lambda: _Pipe(self),
                    parts.hostname or "",
                    parts.port or (443 if secure else 80),
                    ssl=context,
                    server_hostname=parts.hostname if context else None,
                )
                self._flush()
                response = await self._handshake
        except (OSError, TimeoutError) as exc:
            self._abort()
            raise RemoteError(f"could not open a WebSocket to {self.url}: {exc!r}") from None
        if self._ws.handshake_exc is not None or response.status_code != 101:
            self._abort()
            body = (response.body or b"").decode("utf-8", "replace")[:500].strip()
            raise RemoteError(
                f"the server refused the WebSocket: HTTP {response.status_code}"
                + (f": {body}" if body else ""),
                response.status_code,
            )
        store_cookies(self.cookies, self.url, response.headers.get_all("Set-Cookie"))
        self.connection_id = response.headers.get(CONNECTION_HEADER)
        if not self._ws.reader.buffer:  # `websockets` is between frames: split them from here
            self._fast = WebSocketFrames(client=True, max_size=self._max)

    def _protocol(self) -> Any:
        client: Any = require_extra("websockets.client")
        uri: Any = require_extra("websockets.uri")
        extensions = None
        if self._compression:
            deflate: Any = require_extra("websockets.extensions.permessage_deflate")
            extensions = [deflate.ClientPerMessageDeflateFactory()]
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
            self._inbox.data(b"\n".join(messages) + b"\n")
        if ws.close_rcvd is not None or ws.state.name == "CLOSED":
            self._end(f"the WebSocket closed ({_close_text(ws)})")

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
        self._end(f"the WebSocket closed ({_close_text(self._ws)})")

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
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        """Read the socket again after `pause_reading`."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def write(self, data: bytes) -> None:
        """Send each complete NDJSON line in `data` as a text frame, at once and in order
        (a partial line waits for its end). Dropped before `connect` and once the
        connection ended."""
        if self._ended or self._ws is None:
            return
        lines = [frame for frame in self._frames.feed(data) if isinstance(frame, bytes)]
        ws = self._ws
        if self._fast is not None and not ws.extensions and ws.state.name == "OPEN":
            if lines and self._transport is not None and not self._transport.is_closing():
                self._transport.write(self._fast.text_frames(lines))
            return
        for line in lines:
            ws.send_text(line)
        self._flush()

    def _flush(self) -> None:
        out = self._ws.data_to_send()
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(out))

    async def drain(self) -> None:
        """Wait while the socket's write buffer is over its high-water mark."""
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
        if self._ws is None or self._pipe is None:
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
