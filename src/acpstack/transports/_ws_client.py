"""The client side of remote ACP over WebSocket: one JSON-RPC message per text frame.

The handshake answer carries `Acp-Connection-Id`; the first message must be `initialize`
(the runtime sends it first anyway). Binary frames are ignored, as the RFD says. Cookies
set by the handshake are kept in the jar (pass your own to keep them across reconnects).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from http.cookiejar import CookieJar
from typing import Any

from acpstack.transports._cookies import cookie_header, store_cookies
from acpstack.transports._envelope import compact
from acpstack.transports._extras import require
from acpstack.transports._remote_base import CONNECTION_HEADER, MessageTransport, RemoteError
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE


class WebSocketClientTransport(MessageTransport):
    """A Transport to a remote ACP agent at `url` (ws:// or wss://). Call `connect()` first."""

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
        super().__init__(max_message_size)
        self.url = url
        self._headers = dict(headers or {})
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self.cookies = cookies if cookies is not None else CookieJar()
        self._ssl = ssl_context
        self._compression = compression
        self._timeout = timeout
        self._ws: Any = None
        self._closed_error: type[Exception] = ConnectionError
        self.connection_id: str | None = None

    async def connect(self) -> None:
        """Open the WebSocket (raises RemoteError when the server refuses it)."""
        client: Any = require("websockets.asyncio.client")
        exceptions: Any = require("websockets.exceptions")
        self._closed_error = exceptions.ConnectionClosed
        headers = dict(self._headers)
        cookie = cookie_header(self.cookies, self.url)
        if cookie:
            headers["Cookie"] = cookie
        options: dict[str, Any] = {}
        if self._ssl is not None:
            options["ssl"] = self._ssl
        try:
            self._ws = await client.connect(
                self.url,
                additional_headers=headers,
                max_size=self._max_message_size,
                compression="deflate" if self._compression else None,
                open_timeout=self._timeout,
                **options,
            )
        except exceptions.InvalidStatus as exc:
            status = exc.response.status_code
            body = exc.response.body.decode("utf-8", "replace")[:500].strip() if exc.response.body else ""
            raise RemoteError(f"the server refused the WebSocket: HTTP {status}" + (f": {body}" if body else ""), status) from None
        except (OSError, TimeoutError, exceptions.InvalidHandshake) as exc:
            raise RemoteError(f"could not open a WebSocket to {self.url}: {exc!r}") from None
        response_headers = self._ws.response.headers
        store_cookies(self.cookies, self.url, response_headers.get_all("Set-Cookie"))
        self.connection_id = response_headers.get(CONNECTION_HEADER)

    def _start_receiving(self) -> None:
        if self._ws is None:
            raise RuntimeError("call connect() before using the transport")
        self._spawn(self._read())

    async def _read(self) -> None:
        why = "the server closed the WebSocket"
        try:
            while True:
                frame = await self._ws.recv()
                if isinstance(frame, str):  # binary frames are ignored (RFD)
                    await self._wait_reading()
                    self._deliver([compact(frame.encode())])
        except self._closed_error as exc:
            why = f"the WebSocket closed ({_close_text(exc)})"
        self._finish(why)

    async def _send_one(self, message: bytes) -> None:
        try:
            await self._ws.send(message, text=True)
        except self._closed_error as exc:
            self._finish(f"the WebSocket closed ({_close_text(exc)})")

    async def _shutdown(self) -> None:
        await self._stop_tasks()
        if self._ws is not None:
            await self._ws.close()


def _close_text(exc: Any) -> str:
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is None:
        return "no close frame"
    return f"code {rcvd.code}" + (f": {rcvd.reason}" if rcvd.reason else "")
