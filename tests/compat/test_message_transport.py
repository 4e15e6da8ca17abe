"""Connections over a message transport (the official SDK's `send`/`receive`/`close`
protocol), here an in-memory pair of queues: one turn end to end, and the end of the stream
failing what is pending."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import (
    AgentSideConnection,
    ClientSideConnection,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    text_block,
    update_agent_message,
)


class QueueTransport:
    def __init__(self, inbox: asyncio.Queue[Any], outbox: asyncio.Queue[Any]) -> None:
        self.inbox, self.outbox = inbox, outbox
        self.closed = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        await self.outbox.put(message)

    async def receive(self) -> dict[str, Any] | None:
        return await self.inbox.get()  # type: ignore[no-any-return]

    async def close(self) -> None:
        self.closed.set()


def pair() -> tuple[QueueTransport, QueueTransport]:
    a: asyncio.Queue[Any] = asyncio.Queue()
    b: asyncio.Queue[Any] = asyncio.Queue()
    return QueueTransport(a, b), QueueTransport(b, a)


class Agent:
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="m-1")

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        await self.conn.session_update(session_id, update_agent_message(prompt[0]))
        return PromptResponse(stop_reason="end_turn")


class Client:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.texts.append(update.content.text)


async def test_a_turn_over_a_message_transport() -> None:
    agent_side, client_side = pair()
    agent_conn = AgentSideConnection(Agent(), agent_side)
    client = Client()
    conn = ClientSideConnection(client, client_side)
    await asyncio.wait_for(conn.initialize(protocol_version=1), 10)
    session = await asyncio.wait_for(conn.new_session(cwd="/", mcp_servers=[]), 10)
    answer = await asyncio.wait_for(
        conn.prompt(session_id=session.session_id, prompt=[text_block("over messages")]), 10
    )
    assert answer.stop_reason == "end_turn"
    assert client.texts == ["over messages"]
    await conn.close()
    await agent_conn.close()
    assert client_side.closed.is_set() and agent_side.closed.is_set()


async def test_end_of_stream_fails_the_pending_call() -> None:
    agent_side, client_side = pair()
    conn = ClientSideConnection(Client(), client_side)
    call = asyncio.create_task(conn.initialize(protocol_version=1))
    assert (await asyncio.wait_for(agent_side.receive(), 10))["method"] == "initialize"
    await client_side.inbox.put(None)  # the peer's end of stream
    with pytest.raises(ConnectionError, match="Connection closed"):
        await asyncio.wait_for(call, 10)
    await conn.close()
