"""acpstack.testing.connected_pair: a working in-process pair (runs the whole runtime)."""

from __future__ import annotations

from acpstack import Agent, Client
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair


class Echo(Agent):
    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        await self.client.session_update(
            "s1", acp.AgentMessageChunk(content=acp.TextContent(text="hi"))
        )
        return acp.PromptResponse(stop_reason="end_turn")


class Collect(Client):
    def __init__(self) -> None:
        self.updates: list[acp.SessionUpdate] = []

    async def session_update(self, params: acp.SessionNotification) -> None:
        self.updates.append(params.update)


async def test_connected_pair_runs_a_turn() -> None:
    client = Collect()
    async with connected_pair(Echo(), client) as pair:
        await pair.agent.initialize()
        sid = (
            await pair.agent.session_new(acp.NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        ).session_id
        result = await pair.agent.session_prompt(
            acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="x")])
        )
    assert result.stop_reason == "end_turn"
    assert [u.content.text for u in client.updates] == ["hi"]  # type: ignore[union-attr]
    assert pair.client_connection.closed
