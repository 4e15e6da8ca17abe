"""Resumable delivery under faults: a proxy resets every connection between the client
and the server at a random point of a streaming turn (a random byte of the server's
output, or of the client's request), round after round, over HTTP and WebSocket. Every
prompt must end `end_turn`, every chunk must arrive exactly once and in order, and no
prompt may run twice (the agent counts them).

The server is an `AgentServer` on uvicorn in this process and the proxy a real TCP
forwarder: real sockets on 127.0.0.1 throughout. The points are random but seeded; a
failure prints the seed and the round.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from _faulty import FaultyProxy
from _serving import running

import acpstack.events as events
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import ClientRuntime, connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

ROUNDS = int(os.environ.get("ACPSTACK_FAULT_ROUNDS", "200"))
CHUNKS = 400
pytestmark = pytest.mark.timeout(600)


class StreamingAgent(SessionAgent):
    """Any prompt streams CHUNKS chunks "c0", "c1", ...; `prompts` counts the turns run."""

    prompts = 0

    def __init__(self) -> None:
        super().__init__(store=MemorySessionStore())

    async def prompt(self, turn: Turn) -> acp.StopReason:
        type(self).prompts += 1
        for index in range(CHUNKS):
            await turn.say(f"c{index}")
        return "end_turn"


@asynccontextmanager
async def proxied_server() -> AsyncIterator[tuple[FaultyProxy, int]]:
    async with running(AgentServer(StreamingAgent)) as url:
        proxy = FaultyProxy(int(url.rsplit(":", 1)[1].split("/")[0]))
        port = await proxy.start()
        try:
            yield proxy, port
        finally:
            await proxy.aclose()


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_every_chunk_arrives_once_in_order_whatever_the_reset_point(scheme: str) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    chunks: list[str] = []

    def on_update(_sid: str, update: object) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            chunks.append(update.content.text)

    StreamingAgent.prompts = 0
    expected = [f"c{i}" for i in range(CHUNKS)]
    async with proxied_server() as (proxy, port):
        runtime = ClientRuntime(on_update=on_update)
        url = f"{scheme}://127.0.0.1:{port}/acp"
        async with connect_remote(url, runtime, reconnect=False) as conn:
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            before = proxy.bytes_down
            assert (await runtime.prompt(sid, "go")).stop_reason == "end_turn"  # uncut
            turn_bytes = proxy.bytes_down - before
            assert chunks == expected
            cut = 0
            for round_ in range(ROUNDS):
                chunks.clear()
                where = f"seed {seed}, round {round_}"
                if rng.random() < 0.8:
                    proxy.arm("down", rng.randint(1, turn_bytes * 9 // 10))
                else:
                    proxy.arm("up", rng.randint(1, 150))
                response = await asyncio.wait_for(runtime.prompt(sid, "go"), 60)
                cut += proxy.fired.is_set()
                proxy.disarm()
                assert response.stop_reason == "end_turn", where
                assert chunks == expected, f"{where}: {len(chunks)} chunks, not in order once"
            transport = conn.transport
            resumes = getattr(transport, "resumes", 0)
    assert StreamingAgent.prompts == ROUNDS + 1  # none ran twice
    assert cut >= ROUNDS * 3 // 4, f"only {cut} of {ROUNDS} rounds were cut"
    assert resumes >= cut
