"""A small MCP server built with the official `mcp` SDK, for the agents' MCP tests.

`mcp_server.py` serves on stdio. `mcp_server.py http` or `mcp_server.py sse` serves
streamable HTTP (at /mcp) or SSE (at /sse) on 127.0.0.1, on a port it picks and prints on
stdout once it is listening. With MCP_TOKEN set, HTTP requests must carry
`Authorization: Bearer $MCP_TOKEN`.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("acpstack-test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back (annotated read-only)."""
    return text


@server.tool()
def getenv(name: str) -> str:
    """Read an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def fail() -> str:
    """Always fails."""
    raise RuntimeError("this tool always fails")


def with_token(app: Any, token: str) -> Any:
    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"authorization") != f"Bearer {token}".encode():
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-length", b"0")],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


def serve_http(kind: str) -> None:
    import uvicorn

    app = server.sse_app() if kind == "sse" else server.streamable_http_app()
    token = os.environ.get("MCP_TOKEN")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(
        uvicorn.Config(with_token(app, token) if token else app, log_level="warning", lifespan="on")
    ).run(sockets=[sock])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("http", "sse"):
        serve_http(sys.argv[1])
    else:
        server.run("stdio")
