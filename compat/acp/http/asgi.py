"""`create_asgi_app`: an ASGI 3 application serving an official-API agent over streamable
HTTP and WebSocket, on acpstack's `AgentServer` (see `acp.http.server`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp.http.server import AcpServer, AgentFactory

__all__ = ["AcpAsgiApp", "create_asgi_app"]


class AcpAsgiApp:
    """Serves `server` on whatever path it is mounted at, as upstream (the endpoint is
    path-agnostic); lifespan events start and stop it."""

    def __init__(self, server: AcpServer) -> None:
        self.server = server

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "path": self.server.app.path}
        await self.server.app(scope, receive, send)


def create_asgi_app(agent_factory: AgentFactory, **options: Any) -> AcpAsgiApp:
    """An ASGI app serving `agent_factory(conn)` per connection (`options`: those of
    `AcpServer`)."""
    return AcpAsgiApp(AcpServer(agent_factory, **options))
