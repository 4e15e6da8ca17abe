"""The official SDK's WebSocket client entry point (`create_websocket_stream`), on acpstack's
WebSocket transport. `acp.ws.server` has the ASGI handler of `acp.http.AcpServer`."""

from __future__ import annotations

from typing import Any

__all__ = ["create_websocket_stream"]


def __getattr__(name: str) -> Any:
    if name == "create_websocket_stream":
        from acp.ws.client import create_websocket_stream

        return create_websocket_stream
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
