"""Over WebSocket, while the connection's reader is idle the server passes a usual message
to the agent as it arrives, and queues the others (opening a session, for one) for the
reader: a burst that mixes both kinds reaches the agent in the order it was sent."""

from __future__ import annotations

import asyncio

import pytest
from _serving import running

from acpstack import Agent, Client
from acpstack.client import connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

pytestmark = pytest.mark.timeout(60)


class Recording(Agent):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        self.seen.append("new")
        return acp.NewSessionResponse(session_id=f"s{len(self.seen)}")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        block = params.prompt[0]
        self.seen.append(block.text if isinstance(block, acp.TextContent) else "?")
        return acp.PromptResponse(stop_reason="end_turn")


async def test_a_burst_of_usual_and_queued_messages_reaches_the_agent_in_order() -> None:
    agents: list[Recording] = []

    def make() -> Recording:
        agents.append(Recording())
        return agents[-1]

    new = acp.NewSessionRequest(cwd="/tmp", mcp_servers=[])
    async with running(AgentServer(make)) as url:
        async with connect_remote("ws" + url[4:], Client()) as conn:
            await conn.agent.initialize()
            sid = (await conn.agent.session_new(new)).session_id
            burst = [
                conn.agent.session_new(new)
                if i % 5 == 2
                else conn.agent.session_prompt(
                    acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=f"p{i}")])
                )
                for i in range(40)
            ]
            await asyncio.gather(*burst)  # sent in this order, at once
    assert agents[0].seen == ["new"] + ["new" if i % 5 == 2 else f"p{i}" for i in range(40)]
