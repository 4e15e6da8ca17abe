"""W8 server on acpstack: `python acpstack_remote_server.py PORT` serves BenchAgent (one per
connection, in this process) on http://127.0.0.1:PORT/acp and ws://..., prints "READY <port>"."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from acpstack_agent import BenchAgent  # noqa: E402

from acpstack.rpc import run  # noqa: E402
from acpstack.server import AgentServer, bind_socket, serve_remote  # noqa: E402


async def main(port: int) -> None:
    sock = bind_socket("127.0.0.1", port)

    def ready(bound: object) -> None:
        print(f"READY {sock.getsockname()[1]}", flush=True)

    await serve_remote(AgentServer(BenchAgent), sock=sock, on_ready=ready)


if __name__ == "__main__":
    run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
