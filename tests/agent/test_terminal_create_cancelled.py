"""A turn cancelled while `terminal/create` is on its way still releases the terminal the
client creates: the client's terminal and its process must not outlive the turn."""

from __future__ import annotations

import asyncio

from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import Client
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair


class Runner(SessionAgent):
    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.run_command("sleep", ["300"])
        return "end_turn"


class SlowTerminals(Client):
    def __init__(self) -> None:
        self.creating = asyncio.Event()
        self.may_answer = asyncio.Event()
        self.released: list[str] = []

    async def terminal_create(
        self, params: acp.CreateTerminalRequest
    ) -> acp.CreateTerminalResponse:
        self.creating.set()
        await asyncio.shield(self.may_answer.wait())  # a client that creates it anyway
        return acp.CreateTerminalResponse(terminal_id="t-1")

    async def terminal_release(
        self, params: acp.ReleaseTerminalRequest
    ) -> acp.ReleaseTerminalResponse:
        self.released.append(params.terminal_id)
        return acp.ReleaseTerminalResponse()


async def test_a_terminal_created_after_the_turn_was_cancelled_is_released() -> None:
    client = SlowTerminals()
    async with connected_pair(Runner(store=MemorySessionStore()), client) as pair:
        await pair.agent.initialize(
            acp.InitializeRequest(
                protocol_version=1, client_capabilities=acp.ClientCapabilities(terminal=True)
            )
        )
        sid = (
            await pair.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        ).session_id
        turn = asyncio.create_task(
            pair.agent.session_prompt(
                acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="go")])
            )
        )
        await asyncio.wait_for(client.creating.wait(), 10)
        await pair.agent.session_cancel(acp.CancelNotification(session_id=sid))
        client.may_answer.set()
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        assert client.released == ["t-1"]
