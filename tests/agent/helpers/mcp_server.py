"""A small MCP server built with the official `mcp` SDK, for the agent's MCP tests."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("acpstack-test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
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


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
