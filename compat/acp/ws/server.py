"""The WebSocket half of `acp.http.AcpServer`: acpstack's WebSocket profile (one JSON-RPC
message per text frame, `Acp-Connection-Id` in the handshake answer, resume)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.http.server import AcpServer

__all__ = ["handle_asgi_websocket"]


async def handle_asgi_websocket(
    server: AcpServer, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
) -> None:
    """Serve one ASGI `websocket` scope as a new ACP connection of `server`."""
    headers = list(scope.get("headers") or [])
    if not any(name.lower() == b"host" for name, _ in headers):
        headers.append((b"host", b"127.0.0.1"))
    scope = {**scope, "path": server.app.path, "headers": headers}
    await server.app(scope, receive, send)
