"""Code written for the official SDK's API, on the layer: a real agent subprocess over pipes,
driven by a client that uses the same API."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import (
    PROTOCOL_VERSION,
    Client,
    RequestError,
    RequestPermissionResponse,
    spawn_agent_process,
    spawn_stdio_transport,
    text_block,
)
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    SessionNotification,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

AGENT = Path(__file__).with_name("echo_agent.py")


class Recorder(Client):
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id)
        )


async def test_a_turn_through_a_real_subprocess() -> None:
    client = Recorder()
    async with spawn_agent_process(client, sys.executable, str(AGENT)) as (conn, _process):
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        assert init.protocol_version == 1
        assert init.agent_info is not None and init.agent_info.name == "echo"
        session = await conn.new_session(cwd=str(AGENT.parent), mcp_servers=[])
        response = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("hello there")]), 30
        )
    assert response.stop_reason == "end_turn"
    # Every update of the turn reached the client before prompt() returned, in order.
    assert [type(u) for u in client.updates] == [AgentMessageChunk, AgentMessageChunk]
    assert [u.content.text for u in client.updates] == ["hello", "there"]
    assert isinstance(client.updates[0].content, TextContentBlock)


async def test_tool_call_and_permission_round_trip() -> None:
    client = Recorder()
    async with spawn_agent_process(client, sys.executable, str(AGENT)) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(AGENT.parent), mcp_servers=[])
        await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("tool")]), 30
        )
    kinds = [type(u) for u in client.updates]
    assert kinds == [ToolCallStart, ToolCallProgress, AgentMessageChunk, AgentMessageChunk]
    assert client.updates[1].status == "completed"
    assert [u.content.text for u in client.updates[2:]] == ["permission:", "selected"]


async def test_an_agents_request_error_reaches_the_client_as_request_error() -> None:
    async with spawn_agent_process(Recorder(), sys.executable, str(AGENT)) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(AGENT.parent), mcp_servers=[])
        with pytest.raises(RequestError) as caught:
            await asyncio.wait_for(
                conn.prompt(session_id=session.session_id, prompt=[text_block("boom")]), 30
            )
    assert caught.value.code == -32602
    assert caught.value.data == {"why": "boom"}


async def test_invalid_params_from_the_peer_get_a_clear_error() -> None:
    # A prompt whose content block has no text: acpstack's typed decode refuses it (-32602)
    # before the agent's code runs, and the agent goes on serving.
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": "s-1", "prompt": [{"type": "text"}]},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []},
        },
    ]
    async with spawn_stdio_transport(sys.executable, str(AGENT)) as (reader, writer, _process):
        writer.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        await writer.drain()
        answers = {}
        while len(answers) < 3:
            line = await asyncio.wait_for(reader.readline(), 30)
            assert line, "the agent closed its stdout"
            message = json.loads(line)
            answers[message["id"]] = message
    assert answers[2]["error"]["code"] == -32602
    assert answers[3]["result"] == {"sessionId": "s-1"}


async def test_a_local_mistake_is_a_clear_error_before_sending() -> None:
    async with spawn_agent_process(Recorder(), sys.executable, str(AGENT)) as (conn, _process):
        with pytest.raises(ValueError):  # pydantic's ValidationError
            await conn.prompt(session_id="s-1", prompt=[{"type": "text"}])


def test_schema_objects_behave_as_pydantic_models() -> None:
    wire = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x"},
        },
    }
    note = SessionNotification.model_validate(wire)
    assert isinstance(note.update, AgentMessageChunk)
    assert note.update.sessionUpdate == "agent_message_chunk"  # camelCase reads work too
    assert note.model_dump(by_alias=True, exclude_none=True) == wire
    assert note == SessionNotification(
        session_id="s", update=AgentMessageChunk(content=text_block("x"))
    )
    with pytest.raises(ValueError):
        SessionNotification.model_validate({"sessionId": "s", "update": {"sessionUpdate": "nope"}})
