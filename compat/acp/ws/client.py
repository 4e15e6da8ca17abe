"""`create_websocket_stream`: a message `Transport` to a remote agent over WebSocket, carried
by acpstack's `WebSocketClientTransport` (push-based, resumes a broken connection when the
server can, pings answered, size limit)."""

from __future__ import annotations

from http.cookiejar import CookieJar

from acp._cookies import MemoryAcpCookieStore
from acp._messages import ByteTransportMessages
from acp._transport import Transport
from acpstack.transports import WebSocketClientTransport

__all__ = ["MemoryAcpCookieStore", "create_websocket_stream"]


async def create_websocket_stream(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    cookie_store: MemoryAcpCookieStore | None = None,
) -> Transport:
    """Connect to `url` (ws:// or wss://) and return the connection as a `Transport` for
    `acp.connect_to_agent`. Cookies in `cookie_store` go with the handshake; cookies the
    handshake sets are added to it (reuse the store across reconnects for affinity)."""
    store = cookie_store if cookie_store is not None else MemoryAcpCookieStore()
    extra = dict(headers or {})
    if (cookie := store.cookie_header()) and not any(k.lower() == "cookie" for k in extra):
        extra["Cookie"] = cookie
    jar = CookieJar()
    transport = WebSocketClientTransport(url, headers=extra, cookies=jar)
    await transport.connect()
    store.store_set_cookies(f"{c.name}={c.value}" for c in jar)
    return ByteTransportMessages(transport)
