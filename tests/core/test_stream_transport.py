"""StreamTransport: an agent and a client over a real TCP connection on 127.0.0.1."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import ConnectionClosed
from acpstack.agent import Agent, connect_agent
from acpstack.client import connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import StreamTransport

sys.path.insert(0, str(Path(__file__).parent))
from tests_core_clients import SlowCollector  # noqa: E402


class CountingStreams(StreamTransport):
    pauses = 0

    def pause_reading(self) -> None:
        self.pauses += 1
        super().pause_reading()


class Streamer(Agent):
    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        for i in range(20_000):
            await self.client.session_update(
                params.session_id, acp.AgentMessageChunk(content=acp.TextContent(text=f"{i:08d}"))
            )
        answer = await self.client.ext_method("_test/echo", {"n": 1})
        assert answer == {"n": 1}
        return acp.PromptResponse(stop_reason="end_turn")


class EchoingCollector(SlowCollector):
    """Answers the agent's extension request by echoing its params."""

    async def ext_method(self, method: str, params: Any) -> Any:
        return params


async def test_a_turn_over_tcp_with_backpressure_and_a_reverse_request() -> None:
    served: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = connect_agent(Streamer(), StreamTransport(reader, writer))
        async with conn:
            await conn.wait_closed()
        served.set_result(True)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = EchoingCollector(yield_every=3)  # slower than the agent, so reading has to pause
        transport = CountingStreams(reader, writer)
        conn = connect_client(client, transport)
        async with conn.connection:
            await conn.agent.initialize()
            sid = (
                await conn.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
            ).session_id
            prompt = acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="go")])
            answer = await asyncio.wait_for(conn.agent.session_prompt(prompt), 60)
            assert answer.stop_reason == "end_turn"
            assert client.texts == [f"{i:08d}" for i in range(20_000)]
            assert transport.pauses >= 1
        # Closing our side ends the agent's connection too.
        assert await asyncio.wait_for(served, 10)
        with pytest.raises(ConnectionClosed):
            await conn.agent.initialize()
