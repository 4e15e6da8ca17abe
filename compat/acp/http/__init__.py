"""The official SDK's streamable HTTP entry points, on acpstack's remote transports:
`create_http_stream` (client) and `AcpServer` (server core; `acp.http.asgi.create_asgi_app`
makes it an ASGI app). Loaded on first use, as upstream."""

from __future__ import annotations

from typing import Any

__all__ = ["AcpServer", "create_http_stream"]


def __getattr__(name: str) -> Any:
    if name == "create_http_stream":
        from acp.http.client import create_http_stream

        return create_http_stream
    if name == "AcpServer":
        from acp.http.server import AcpServer

        return AcpServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
