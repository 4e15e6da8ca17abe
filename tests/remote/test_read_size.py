"""On the stdlib loop, the client's socket transports (streamable HTTP and WebSocket) read
in chunks small enough to come from the heap (a 256 KiB read buffer is a fresh mmap per
read in glibc: acpstack._reads), and messages larger than one read arrive whole both ways.
(The server's side: tests/remote/test_refused_body.py.)"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from _serving import running

from acpstack._reads import HEAP_READ_SIZE
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import ClientRuntime, connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

SIZE = 3 * HEAP_READ_SIZE + 17  # more than one read can take


class Sized(SessionAgent):
    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.say(f"{len(turn.text)} ")
        await turn.say("y" * SIZE)
        return "end_turn"


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_client_sockets_read_heap_sized_chunks_and_large_messages_arrive_whole(
    scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    recv = socket.socket.recv
    server_port = 0

    def counting_recv(self: socket.socket, size: int, *args: Any) -> bytes:
        if self.getsockname()[1] != server_port:  # the client's side
            sizes.append(size)
        return recv(self, size, *args)

    monkeypatch.setattr(socket.socket, "recv", counting_recv)
    server = AgentServer(lambda: Sized(store=MemorySessionStore()))
    async with running(server) as url:
        server_port = int(url.rsplit(":", 1)[1].split("/")[0])
        runtime = ClientRuntime()
        async with connect_remote(scheme + url[4:], runtime):
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            await runtime.prompt(sid, "x" * SIZE)
            said = "".join(m.text for m in runtime.sessions[sid].state.messages[1:])
    assert said == f"{SIZE} " + "y" * SIZE
    # (this test runs on the stdlib loop, whose socket transports call recv)
    assert sizes and max(sizes) <= HEAP_READ_SIZE, sorted(set(sizes))
