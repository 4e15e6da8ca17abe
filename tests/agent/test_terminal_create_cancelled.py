"""A turn cancelled while `terminal/create` is on its way still releases the terminal the
client creates: the client's terminal and its process must not outlive the turn."""

from __future__ import annotations

import asyncio
import socket

from acpstack.agent import MemorySessionStore, SessionAgent, Turn, connect_agent
from acpstack.client import Client, connect_client
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair
from acpstack.transports import StreamTransport


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


class AnswersAfterASecondCancel(SlowTerminals):
    """Records each `terminal/release` as an event, so that the test waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.release_seen = asyncio.Event()

    async def terminal_release(
        self, params: acp.ReleaseTerminalRequest
    ) -> acp.ReleaseTerminalResponse:
        answer = await super().terminal_release(params)
        self.release_seen.set()
        return answer


async def test_a_late_terminal_is_released_even_when_the_turn_is_cancelled_twice() -> None:
    """The client cancels the turn while `terminal/create` is on its way, and again while
    the agent waits for that late answer to release it: the agent's turn ends cancelled at
    once, and the terminal the client then creates is still released (over a real socket)."""
    left, right = socket.socketpair()
    client = AnswersAfterASecondCancel()
    agent_streams = await asyncio.open_connection(sock=left)
    client_streams = await asyncio.open_connection(sock=right)
    agent_conn = connect_agent(Runner(store=MemorySessionStore()), StreamTransport(*agent_streams))
    client_conn = connect_client(client, StreamTransport(*client_streams))
    async with agent_conn, client_conn.connection:
        peer = client_conn.agent
        caps = acp.ClientCapabilities(terminal=True)
        await peer.initialize(acp.InitializeRequest(protocol_version=1, client_capabilities=caps))
        sid = (await peer.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
        turn = asyncio.create_task(
            peer.session_prompt(
                acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="go")])
            )
        )
        await asyncio.wait_for(client.creating.wait(), 30)
        await peer.session_cancel(acp.CancelNotification(session_id=sid))
        # A round trip after the first cancel: the agent read it, and its turn then went on
        # to wait for the late answer, before it reads the second cancel.
        await asyncio.wait_for(peer.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[])), 30)
        await peer.session_cancel(acp.CancelNotification(session_id=sid))
        await asyncio.wait_for(peer.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[])), 30)
        client.may_answer.set()  # the client creates the terminal after all
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
        await asyncio.wait_for(client.release_seen.wait(), 30)
        assert client.released == ["t-1"]
