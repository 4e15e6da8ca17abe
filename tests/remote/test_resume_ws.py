"""Resuming over WebSocket, probed with a plain WebSocket client over a real socket: a
socket that vanishes leaves its connection (and its turn) running, a new socket resumes
it with the counts of messages each side has, a clean close ends it, and a connection
abandoned by a client that came back as a new one is let go when the session is loaded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _probe import INIT, prompt, request
from _serving import load_scripted, running
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(params=["ScriptedAgent"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[AgentServer, str]]:
    app = AgentServer(getattr(load_scripted(), request.param))
    async with running(app) as url:
        yield app, url.replace("http://", "ws://")


async def receive(ws: ClientConnection, count: int) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(ws.recv(), 10)) for _ in range(count)]


async def vanish(ws: ClientConnection) -> None:
    """Drop the socket without a close frame, as a dead network or process does."""
    ws.transport.abort()
    await ws.wait_closed()


async def until_detached(app: AgentServer, connection_id: str) -> None:
    while app.connections[connection_id].has_receiver:
        await asyncio.sleep(0.01)


async def test_a_vanished_socket_is_resumed_where_it_was(served: tuple[AgentServer, str]) -> None:
    app, url = served
    ws = await connect(url)
    assert ws.response is not None
    assert ws.response.headers["acp-resumable"] == "1"
    cid = ws.response.headers["acp-connection-id"]
    await ws.send(json.dumps(INIT))
    await ws.send(json.dumps(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []})))
    answers = await receive(ws, 2)
    session = answers[1]["result"]["sessionId"]
    await ws.send(json.dumps(prompt(2, session, "stream 3")))
    first = await receive(ws, 2)  # two of the three chunks; the rest streams while away
    await vanish(ws)
    await until_detached(app, cid)
    assert cid in app.connections  # kept for a resume: its turn runs on
    resumed = await connect(
        url, additional_headers={"Acp-Connection-Id": cid, "Last-Event-ID": "4"}
    )
    assert resumed.response is not None
    assert resumed.response.headers["acp-received"] == "3"  # initialize, new, prompt
    rest = await receive(resumed, 2)
    texts = [m["params"]["update"]["content"]["text"] for m in [*first, *rest[:1]]]
    assert texts == ["00000000", "00000001", "00000002"]
    assert rest[1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
    await resumed.close()  # a clean close ends the connection
    while cid in app.connections:
        await asyncio.sleep(0.01)


async def test_a_resume_the_server_cannot_serve_is_refused(served: tuple[AgentServer, str]) -> None:
    app, url = served
    with pytest.raises(InvalidStatus) as unknown:
        await connect(url, additional_headers={"Acp-Connection-Id": "nope", "Last-Event-ID": "0"})
    assert unknown.value.response.status_code == 404
    ws = await connect(url)
    assert ws.response is not None
    cid = ws.response.headers["acp-connection-id"]
    await ws.send(json.dumps(INIT))
    await receive(ws, 1)
    await vanish(ws)
    await until_detached(app, cid)
    for last, status in (("5", 410), ("x", 400)):
        with pytest.raises(InvalidStatus) as refused:
            await connect(url, additional_headers={"Acp-Connection-Id": cid, "Last-Event-ID": last})
        assert refused.value.response.status_code == status
        if status == 410:  # the client is told why, not only the status
            assert b"cannot be resumed: " in refused.value.response.body


@pytest.mark.parametrize("served", ["PersistentAgent"], indirect=True)
async def test_a_session_left_on_a_vanished_connection_can_be_loaded_anew(
    served: tuple[AgentServer, str],
) -> None:
    app, url = served
    ws = await connect(url)
    assert ws.response is not None
    old = ws.response.headers["acp-connection-id"]
    await ws.send(json.dumps(INIT))
    await ws.send(json.dumps(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []})))
    session = (await receive(ws, 2))[1]["result"]["sessionId"]
    await vanish(ws)
    await until_detached(app, old)
    # the client came back as a new connection instead of resuming: the old one lets go
    async with connect(url) as again:
        await again.send(json.dumps(INIT))
        load = {"sessionId": session, "cwd": "/tmp", "mcpServers": []}
        await again.send(json.dumps(request(1, "session/load", load)))
        messages = [m for m in await receive(again, 2) if m.get("id") == 1]
        while not messages:
            messages = [m for m in await receive(again, 1) if m.get("id") == 1]
        assert "result" in messages[0], messages[0]
    assert old not in app.connections


RELEASE = asyncio.Event()
HELD_STORE = MemorySessionStore()


class HoldingAgent(SessionAgent):
    """'hold' says one chunk, waits for RELEASE, says another."""

    def __init__(self) -> None:
        super().__init__(store=HELD_STORE)

    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.say("before")
        await RELEASE.wait()
        await turn.say("after")
        return "end_turn"


async def test_a_session_loaded_anew_replays_the_turn_that_ran_while_its_client_was_away() -> None:
    RELEASE.clear()
    app = AgentServer(HoldingAgent)
    async with running(app) as http_url:
        url = http_url.replace("http://", "ws://")
        ws = await connect(url)
        assert ws.response is not None
        old = ws.response.headers["acp-connection-id"]
        await ws.send(json.dumps(INIT))
        await ws.send(json.dumps(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []})))
        session = (await receive(ws, 2))[1]["result"]["sessionId"]
        await ws.send(json.dumps(prompt(2, session, "hold")))
        await receive(ws, 1)  # "before"
        await vanish(ws)  # the client process died mid-turn
        await until_detached(app, old)
        async with connect(url) as again:
            await again.send(json.dumps(INIT))
            await receive(again, 1)
            load = {"sessionId": session, "cwd": "/tmp", "mcpServers": []}
            await again.send(json.dumps(request(1, "session/load", load)))
            # the load waits for the turn left running on the old connection
            while not any(c._opening for c in app.connections.values() if c.id != old):
                await asyncio.sleep(0.01)
            RELEASE.set()  # now the turn ends there; then the load replays it whole
            replay: list[dict[str, Any]] = []
            while not replay or replay[-1].get("id") != 1:
                replay += await receive(again, 1)
        assert "result" in replay[-1], replay[-1]
        texts = [
            m["params"]["update"]["content"].get("text")
            for m in replay
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert texts == ["before", "after"]
        assert old not in app.connections
