"""`acpstack chat --url`: the transport to a remote agent (streamable HTTP or WebSocket)."""

from __future__ import annotations

from typing import Any

from acpstack.transports import MissingExtraError, RemoteError, Transport


async def remote_transport(url: str, token: str | None) -> Transport:
    """A connected transport to `url`: http(s):// uses streamable HTTP, ws(s):// a WebSocket.

    Raises RemoteError (server unreachable or refusing) or ValueError (not such a URL)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("http", "https"):
        from acpstack.transports import HttpClientTransport

        return HttpClientTransport(url, token=token)
    if scheme in ("ws", "wss"):
        from acpstack.transports import WebSocketClientTransport

        transport = WebSocketClientTransport(url, token=token)
        await transport.connect()
        return transport
    raise ValueError(f"--url takes http(s):// or ws(s):// URLs, not {url!r}")


REMOTE_ERRORS: tuple[type[Exception], ...] = (RemoteError, MissingExtraError, ValueError)


def describe(exc: Any) -> str:
    return f"error: could not connect to the remote agent: {exc}"
