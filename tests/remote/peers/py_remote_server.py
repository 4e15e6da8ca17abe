"""A remote ACP server on the official Python SDK (`acp.http.asgi.create_asgi_app` on
uvicorn), serving the interop tests' scripted agent (tests/interop/peers/py_sdk_agent.py:
permission | wait | stream N | <echo>). Runs in the SDK's private venv; never imports
acpstack. Prints "READY <port>" once it listens on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import uvicorn
from acp.http.asgi import create_asgi_app

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "interop" / "peers"))
from py_sdk_agent import ScriptedAgent  # noqa: E402


async def main(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    app = create_asgi_app(lambda _conn: ScriptedAgent())
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    )
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.01)
    print(f"READY {sock.getsockname()[1]}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
