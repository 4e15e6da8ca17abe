"""Our server's streamable HTTP profile, probed with raw requests over a real socket:
the RFD's status codes, routing, and where we are liberal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from _probe import INIT, Probe, prompt, request
from _serving import load_scripted, running

from acpstack.schema import v1 as acp
from acpstack.server import AgentServer, ServerLimits

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def server() -> AsyncIterator[tuple[AgentServer, str]]:
    app = AgentServer(
        load_scripted().ScriptedAgent,
        limits=ServerLimits(max_message_size=64 * 1024, keepalive_interval=0.2),
    )
    async with running(app) as url:
        yield app, url
    assert app.connections == {}


@pytest.fixture
async def probe(server: tuple[AgentServer, str]) -> AsyncIterator[Probe]:
    probe = Probe(server[1])
    yield probe
    await probe.aclose()


async def test_initialize_is_answered_200_with_a_connection_id(probe: Probe) -> None:
    body = await probe.initialize()
    assert body["id"] == 0 and body["result"]["protocolVersion"] == 1
    assert probe.connection_id


async def test_a_whole_session_over_post_and_event_streams(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream() as events:
        session = await probe.new_session(events)
        async with probe.stream(session) as session_events:
            response = await probe.post(prompt(2, session, "stream 3"), session=session)
            assert response.status_code == 202 and response.content == b""
            messages = await session_events.next(4)
    assert [m["params"]["update"]["content"]["text"] for m in messages[:3]] == [
        "00000000",
        "00000001",
        "00000002",
    ]
    assert messages[3] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}


async def test_a_session_stream_opened_late_gets_what_was_held_for_it(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream() as events:
        session = await probe.new_session(events)
        assert (
            await probe.post(prompt(2, session, "stream 2"), session=session)
        ).status_code == 202
        async with probe.stream(session) as session_events:
            messages = await session_events.next(3)
    assert messages[-1]["id"] == 2


async def test_a_session_stream_may_open_before_the_session_exists(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream("not-yet-known") as early:
        assert early.response.headers["content-type"] == "text/event-stream"


async def test_a_reply_without_acp_session_id_is_accepted(probe: Probe) -> None:
    # The Python SDK's client leaves the header off its replies; the TypeScript server refuses them.
    await probe.initialize()
    async with probe.stream() as events:
        session = await probe.new_session(events)
        async with probe.stream(session) as session_events:
            await probe.post(prompt(2, session, "permission"), session=session)
            asking, ask = await session_events.next(2)
            assert ask["method"] == "session/request_permission"
            reply = {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
            }
            assert (await probe.post(reply)).status_code == 202
            outcome, done = await session_events.next(2)
    assert outcome["params"]["update"]["content"]["text"] == "outcome: allow"
    assert done["result"] == {"stopReason": "end_turn"}


async def test_status_codes(probe: Probe) -> None:
    await probe.initialize()
    new = request(1, "session/new", {"cwd": "/tmp", "mcpServers": []})
    assert (await probe.post(new, content_type="text/plain")).status_code == 415
    assert (await probe.post(new, connection="")).status_code == 400
    assert (await probe.post(new, connection="no-such-connection")).status_code == 404
    assert (await probe.post(INIT)).status_code == 400  # initialize on an existing connection
    bad = await probe.post(None, raw=b"{not json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
    invalid = await probe.post({"jsonrpc": "2.0", "hello": 1})
    assert invalid.status_code == 400 and invalid.json()["error"]["code"] == -32600
    batch = await probe.post([new, new])
    assert batch.status_code == 501 and batch.json()["error"]["code"] == -32600
    assert (
        await probe.post(
            None, raw=b'{"jsonrpc":"2.0","method":"x","params":{"pad":"' + b"x" * 70_000 + b'"}}'
        )
    ).status_code == 413
    long_id = await probe.post(request(1, "session/list", {}) | {"id": "x" * 2000})
    assert long_id.status_code == 400
    mismatched = await probe.post(prompt(3, "sess-a", "hi"), session="sess-b")
    assert mismatched.status_code == 400
    async with probe.stream(expect=406, accept="application/json"):
        pass
    headers = {"Accept": "text/event-stream"}
    assert (await probe.http.get(probe.url, headers=headers)).status_code == 400
    assert (
        await probe.http.get(probe.url, headers={**headers, "Acp-Connection-Id": "nope"})
    ).status_code == 404
    assert (await probe.http.put(probe.url)).status_code == 405
    assert (await probe.http.get(probe.url.replace("/acp", "/other"))).status_code == 404


async def test_a_second_receiver_on_one_stream_gets_409(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream():
        async with probe.stream(expect=409):
            pass
    async with probe.stream():  # free again once the first receiver left
        pass


async def test_delete_ends_the_connection_its_streams_and_its_agent(
    server: tuple[AgentServer, str], probe: Probe
) -> None:
    app, _ = server
    await probe.initialize()
    connection = app.connections[probe.connection_id]
    async with probe.stream() as events:
        deleted = await probe.http.delete(
            probe.url, headers={"Acp-Connection-Id": probe.connection_id}
        )
        assert deleted.status_code == 202
        with pytest.raises(StopAsyncIteration):
            await events.next()
    assert connection.done.is_set() and app.connections == {}
    assert (
        await probe.http.delete(probe.url, headers={"Acp-Connection-Id": probe.connection_id})
    ).status_code == 404
    assert (await probe.http.delete(probe.url)).status_code == 400
    assert (await probe.post(request(1, "session/list", {}))).status_code == 404


async def test_quiet_streams_get_keepalive_comments(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream() as events:
        async with asyncio.timeout(5):
            async for chunk in events.response.aiter_bytes():
                if chunk == b":\n\n":
                    break


async def test_batches_are_handled_one_by_one_when_switched_on() -> None:
    app = AgentServer(load_scripted().ScriptedAgent, limits=ServerLimits(accept_batches=True))
    async with running(app) as url:
        probe = Probe(url)
        await probe.initialize()
        async with probe.stream() as events:
            batch = [
                request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}),
                request(2, "session/new", {"cwd": "/", "mcpServers": []}),
            ]
            assert (await probe.post(batch)).status_code == 202
            answers = await events.next(2)
        assert sorted(a["id"] for a in answers) == [1, 2]
        assert (await probe.post([INIT])).status_code == 400
        await probe.aclose()


async def test_too_many_connections_get_503() -> None:
    app = AgentServer(load_scripted().ScriptedAgent, limits=ServerLimits(max_connections=1))
    async with running(app) as url:
        first, second = Probe(url), Probe(url)
        await first.initialize()
        refused = await second.http.post(url, json=INIT)
        assert refused.status_code == 503
        await first.http.delete(url, headers={"Acp-Connection-Id": first.connection_id})
        await second.initialize()
        for p in (first, second):
            await p.aclose()


async def test_a_connection_nobody_listens_to_is_closed_after_the_idle_timeout() -> None:
    app = AgentServer(load_scripted().ScriptedAgent, limits=ServerLimits(idle_timeout=0.3))
    async with running(app) as url:
        probe = Probe(url)
        await probe.initialize()
        connection = app.connections[probe.connection_id]
        await asyncio.wait_for(connection.done.wait(), 10)
        assert (await probe.post(request(1, "session/list", {}))).status_code == 404
        await probe.aclose()


async def test_output_nobody_reads_pauses_the_agent_and_then_closes_the_connection() -> None:
    sent: list[int] = []

    class Counting(load_scripted().ScriptedAgent):  # type: ignore[misc]
        async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
            for i in range(100_000):
                await self.client.session_update(
                    params.session_id,
                    acp.AgentMessageChunk(content=acp.TextContent(text=f"{i:08d}")),
                )
                sent.append(i)
            return acp.PromptResponse(stop_reason="end_turn")

    limits = ServerLimits(max_buffered_bytes=16 * 1024, stall_timeout=3)
    app = AgentServer(Counting, limits=limits)
    async with running(app) as url:
        probe = Probe(url)
        await probe.initialize()
        connection = app.connections[probe.connection_id]
        async with probe.stream() as events:
            session = await probe.new_session(events)
            await probe.post(
                prompt(2, session, "go"), session=session
            )  # nobody opens the session stream
            await asyncio.wait_for(connection.done.wait(), 15)
        assert connection.buffered == 0  # dropped with the connection
        # The agent was held back (16 KiB waiting here, 1 MiB in the pipe), not let run to the end.
        assert 0 < len(sent) < 30_000, len(sent)
        await probe.aclose()


async def test_initialize_that_the_agent_never_answers_is_504() -> None:
    class Mute(load_scripted().ScriptedAgent):  # type: ignore[misc]
        async def initialize(self, params: object) -> object:
            await asyncio.Event().wait()
            raise AssertionError

    app = AgentServer(Mute, limits=ServerLimits(initialize_timeout=0.3))
    async with running(app) as url:
        async with httpx.AsyncClient() as http:
            response = await http.post(url, json=INIT)
        assert response.status_code == 504 and response.json()["error"]["code"] == -32603
        assert app.connections == {}


async def test_an_agent_that_cannot_start_is_502() -> None:
    app = AgentServer(["/nonexistent/agent-binary"])
    async with running(app) as url:
        async with httpx.AsyncClient() as http:
            response = await http.post(
                url,
                content=json.dumps(INIT),
                headers={"Content-Type": "application/json; charset=utf-8"},
            )
        assert response.status_code == 502
        assert app.connections == {}
