"""Our client transports against our server, over both profiles on a real socket: a whole
turn with a permission request, cancellation mid-turn, cookies, reconnecting, errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from http.cookiejar import CookieJar
from typing import Any

import pytest
from _serving import load_scripted, running

import acpstack.events as events
from acpstack import ConnectionClosed
from acpstack.client import ClientRuntime, connect_remote, reconnect
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer, ServerSecurity
from acpstack.transports import RemoteError

pytestmark = pytest.mark.timeout(30)
PROFILES = ["http", "ws"]


def url_for(base: str, profile: str) -> str:
    return base if profile == "http" else "ws" + base[4:]


class Recorder:
    """A ClientRuntime that records the text of every chunk, per session."""

    def __init__(self, answer: str | None = "allow") -> None:
        self.texts: list[str] = []
        self.first_chunk = asyncio.Event()
        self.asked = 0

        async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
            self.asked += 1
            return next((o for o in request.options if o.option_id == answer), None)

        self.runtime = ClientRuntime(ask=ask, on_update=self._update)

    def _update(self, session_id: str, update: Any) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            self.texts.append(update.content.text)
            self.first_chunk.set()


@pytest.fixture
async def base() -> AsyncIterator[str]:
    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as url:
        yield url
    assert app.connections == {}, "every connection ends with its client"


@pytest.mark.parametrize("profile", PROFILES)
async def test_a_turn_with_a_permission_request(base: str, profile: str) -> None:
    rec = Recorder()
    async with connect_remote(url_for(base, profile), rec.runtime) as conn:
        init = await rec.runtime.initialize()
        assert init.agent_info.name == "acpstack-scripted"  # type: ignore[union-attr]
        session = await rec.runtime.new_session("/tmp")
        result = await rec.runtime.prompt(session.session_id, "permission")
        assert result.stop_reason == "end_turn"
        assert rec.texts == ["asking", "outcome: allow"] and rec.asked == 1
        assert (await rec.runtime.prompt(session.session_id, "stream 50")).stop_reason == "end_turn"
        assert rec.texts[2:] == [f"{i:08d}" for i in range(50)]
        assert conn.connection.closed is False


@pytest.mark.parametrize("profile", PROFILES)
async def test_cancelling_mid_turn(base: str, profile: str) -> None:
    rec = Recorder()
    async with connect_remote(url_for(base, profile), rec.runtime):
        await rec.runtime.initialize()
        session = (await rec.runtime.new_session("/tmp")).session_id
        turn = asyncio.ensure_future(rec.runtime.prompt(session, "wait"))
        await asyncio.wait_for(rec.first_chunk.wait(), 10)
        await rec.runtime.cancel(session)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        assert (
            await rec.runtime.prompt(session, "again")
        ).stop_reason == "end_turn"  # the session still works


@pytest.mark.parametrize("profile", PROFILES)
async def test_many_sessions_on_one_connection_at_once(base: str, profile: str) -> None:
    rec = Recorder()
    async with connect_remote(url_for(base, profile), rec.runtime):
        await rec.runtime.initialize()
        sessions = [(await rec.runtime.new_session("/tmp")).session_id for _ in range(8)]
        results = await asyncio.gather(*(rec.runtime.prompt(s, "stream 100") for s in sessions))
        assert {r.stop_reason for r in results} == {"end_turn"}
        for s in sessions:
            assert [
                m.text for m in rec.runtime.sessions[s].state.messages if m.speaker == "agent"
            ] == ["".join(f"{i:08d}" for i in range(100))]


class CookieGate:
    """ASGI middleware: sets a cookie on the first request, then records requests that lack it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.without: list[str] = []
        self.with_cookie = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        cookie = dict(scope["headers"]).get(b"cookie", b"")
        if b"affinity=node-7" in cookie:
            self.with_cookie += 1
        else:
            self.without.append(f"{scope['type']} {scope.get('method', '')}")

        async def send_with_cookie(message: Any) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                message["headers"] = [
                    *message.get("headers", []),
                    (b"set-cookie", b"affinity=node-7; Path=/"),
                ]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


@pytest.mark.parametrize("profile", PROFILES)
async def test_cookies_are_kept_for_the_connection_and_in_a_shared_jar(profile: str) -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    gate = CookieGate(app)
    jar = CookieJar()
    async with running(gate, lifespan_app=app) as base:  # type: ignore[arg-type]
        rec = Recorder()
        async with connect_remote(url_for(base, profile), rec.runtime, cookies=jar):
            await rec.runtime.initialize()
            session = (await rec.runtime.new_session("/tmp")).session_id
            await rec.runtime.prompt(session, "permission")
        assert len(gate.without) == 1, gate.without  # only the very first request came without it
        before = gate.with_cookie
        async with connect_remote(
            url_for(base, profile), Recorder().runtime, cookies=jar
        ) as conn:  # a reconnect
            await conn.agent.initialize()
        assert len(gate.without) == 1 and gate.with_cookie > before


async def test_reconnect_loads_the_session_on_a_new_connection() -> None:
    app = AgentServer(load_scripted().PersistentAgent)
    async with running(app) as base:
        rec = Recorder()
        async with connect_remote(base, rec.runtime) as first:
            await rec.runtime.initialize()
            session = (await rec.runtime.new_session("/tmp")).session_id
            await rec.runtime.prompt(session, "remember me")
            old_connection = first.connection
        assert old_connection.closed
        again = Recorder()
        async with reconnect(url_for(base, "ws"), again.runtime, {session: "/tmp"}):
            history = [m.text for m in again.runtime.sessions[session].state.messages]
            assert history == ["remember me", "echo: remember me"]
            assert (await again.runtime.prompt(session, "still here")).stop_reason == "end_turn"


@pytest.mark.parametrize("profile", PROFILES)
async def test_a_wrong_token_is_refused_with_its_status(profile: str) -> None:
    app = AgentServer(load_scripted().ScriptedAgent, security=ServerSecurity(token="s3cret"))
    async with running(app) as base:
        rec = Recorder()
        if profile == "ws":
            with pytest.raises(RemoteError) as refused:
                async with connect_remote(url_for(base, profile), rec.runtime, token="wrong"):
                    pass
            assert refused.value.status == 401
        else:
            async with connect_remote(base, rec.runtime, token="wrong"):
                with pytest.raises(ConnectionClosed, match="401"):
                    await rec.runtime.initialize()
        async with connect_remote(url_for(base, profile), rec.runtime, token="s3cret"):
            await rec.runtime.initialize()


@pytest.mark.parametrize("profile", PROFILES)
async def test_pending_calls_fail_when_the_server_ends_the_connection(profile: str) -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as base:
        rec = Recorder()
        async with connect_remote(url_for(base, profile), rec.runtime):
            await rec.runtime.initialize()
            session = (await rec.runtime.new_session("/tmp")).session_id
            turn = asyncio.ensure_future(rec.runtime.prompt(session, "wait"))
            await asyncio.wait_for(rec.first_chunk.wait(), 10)
            await app.aclose()  # the server goes away mid-turn
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(turn, 10)


async def test_unreachable_server() -> None:
    rec = Recorder()
    async with connect_remote("http://127.0.0.1:9/acp", rec.runtime):
        with pytest.raises(ConnectionClosed, match="could not reach"):
            await rec.runtime.initialize(timeout=10)
    with pytest.raises(RemoteError, match="could not open"):
        async with connect_remote("ws://127.0.0.1:9/acp", rec.runtime):
            pass
    with pytest.raises(ValueError, match="http://"):
        async with connect_remote("ftp://127.0.0.1/acp", rec.runtime):
            pass


@pytest.mark.parametrize("profile", PROFILES)
async def test_closing_leaves_no_task_behind_on_either_side(profile: str) -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as base:
        baseline = {t for t in asyncio.all_tasks() if not t.done()}
        rec = Recorder()
        async with connect_remote(url_for(base, profile), rec.runtime):
            await rec.runtime.initialize()
            sessions = [(await rec.runtime.new_session("/tmp")).session_id for _ in range(3)]
            await asyncio.gather(*(rec.runtime.prompt(s, "permission") for s in sessions))
            (connection,) = app.connections.values()
            assert len(asyncio.all_tasks()) > len(baseline)
        await asyncio.wait_for(connection.done.wait(), 10)
        # uvicorn ends its per-socket tasks when it sees the sockets close; nothing signals
        # that, so poll (bounded) until only the tasks from before are left.
        leftover: set[asyncio.Task[object]] = set()
        try:
            async with asyncio.timeout(10):
                while (
                    leftover := {t for t in asyncio.all_tasks() if not t.done()}
                    - baseline
                    - {asyncio.current_task()}
                ):  # type: ignore[assignment]
                    await asyncio.sleep(0.02)
        except TimeoutError:
            pass
        assert not leftover, [t.get_coro() for t in leftover]


class RequestLog:
    """ASGI middleware: records each request that names a session, in the order it came."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str]] = []  # (method, session id)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            session = dict(scope["headers"]).get(b"acp-session-id")
            if session is not None:
                self.seen.append((scope["method"], session.decode()))
        await self.app(scope, receive, send)


async def test_the_streams_of_sessions_reattached_at_once_open_side_by_side() -> None:
    """A failover resumes many sessions at once: their streams open together, not one
    per POST (each a new TCP connection, through a proxy: seconds for a few dozen), and
    the resumes are not held until the streams are open."""
    app = AgentServer(load_scripted().PersistentAgent)
    gate = RequestLog(app)
    async with running(gate, lifespan_app=app) as base:  # type: ignore[arg-type]
        first = Recorder()
        async with connect_remote(base, first.runtime):
            await first.runtime.initialize()
            sessions = [(await first.runtime.new_session("/tmp")).session_id for _ in range(3)]
        gate.seen.clear()
        again = Recorder()
        async with connect_remote(base, again.runtime, one_stream=False):
            await again.runtime.initialize()
            await asyncio.gather(*(again.runtime.resume_session(s, "/tmp") for s in sessions))
    streams = [s for method, s in gate.seen if method == "GET"]
    assert sorted(streams) == sorted(sessions), gate.seen  # one stream each
    # A resume's POST does not wait for its session's stream (its answer comes on the
    # connection's stream): none of them names a session whose stream is not open yet.
    assert not [s for method, s in gate.seen if method == "POST" and s not in streams]
