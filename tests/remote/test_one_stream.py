"""`one_stream=True` over streamable HTTP (`Acp-One-Stream: 1`, an acpstack extension): every
message of the connection comes on its one event stream, whatever its session; no stream
per session is opened. A real server on 127.0.0.1, an ASGI middleware logging the requests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import pytest
from _serving import load_scripted, running

import acpstack.events as events
from acpstack.client import ClientRuntime, connect_http, connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer
from acpstack.transports import HttpClientTransport

pytestmark = pytest.mark.timeout(60)


class RequestLog:
    """ASGI middleware: (method, Acp-Session-Id or None) of every HTTP request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            session = dict(scope["headers"]).get(b"acp-session-id")
            self.seen.append((scope["method"], session.decode() if session else None))
        await self.app(scope, receive, send)


class Recorder:
    def __init__(self) -> None:
        self.texts: dict[str, list[str]] = {}
        self.asked = 0

        async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
            self.asked += 1
            return next(o for o in request.options if o.kind == "allow_once")

        self.runtime = ClientRuntime(ask=ask, on_update=self._update)

    def _update(self, session_id: str, update: Any) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            self.texts.setdefault(session_id, []).append(update.content.text)


async def test_by_default_every_session_is_on_the_connections_one_stream() -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    log = RequestLog(app)
    async with running(log, lifespan_app=app) as url:  # type: ignore[arg-type]
        rec = Recorder()
        async with connect_remote(url, rec.runtime) as conn:  # as `acpstack chat --url` does
            await rec.runtime.initialize()
            transport = conn.transport
            assert isinstance(transport, HttpClientTransport) and transport.one_stream
            sessions = [(await rec.runtime.new_session("/tmp")).session_id for _ in range(3)]
            answers = await asyncio.gather(
                *(rec.runtime.prompt(s, "stream 30") for s in sessions),
                rec.runtime.prompt(sessions[0], "permission"),
                return_exceptions=True,
            )
            # two prompts at once in one session: the second is refused, the rest end
            assert sum(isinstance(a, Exception) for a in answers) <= 1
            for s in sessions[1:]:
                assert rec.texts[s] == [f"{i:08d}" for i in range(30)]
            result = await rec.runtime.prompt(sessions[1], "permission")
            assert result.stop_reason == "end_turn" and rec.asked >= 1
            assert rec.texts[sessions[1]][-1] == "outcome: allow"
    gets = [session for method, session in log.seen if method == "GET"]
    assert gets == [None]  # the connection's stream, and no stream per session
    assert all(session is None for _, session in log.seen)


async def test_a_client_that_asks_for_a_stream_per_session_gets_one() -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    log = RequestLog(app)
    async with running(log, lifespan_app=app) as url:  # type: ignore[arg-type]
        rec = Recorder()
        async with connect_http(url, rec.runtime, one_stream=False) as conn:
            await rec.runtime.initialize()
            assert isinstance(conn.transport, HttpClientTransport)
            assert not conn.transport.one_stream
            session = (await rec.runtime.new_session("/tmp")).session_id
            assert (await rec.runtime.prompt(session, "stream 5")).stop_reason == "end_turn"
    assert ("GET", session) in log.seen


async def test_a_session_stream_on_a_one_stream_connection_is_refused() -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as url:
        host, port = url.split("//")[1].split("/")[0].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        ).encode()
        conn = h11.Connection(h11.CLIENT)

        async def exchange(method: str, headers: list[tuple[str, str]], data: bytes) -> Any:
            head = [("Host", f"{host}:{port}"), *headers]
            if data:
                head.append(("Content-Length", str(len(data))))
            out = conn.send(h11.Request(method=method, target="/acp", headers=head))
            if data:
                out += conn.send(h11.Data(data=data))
            out += conn.send(h11.EndOfMessage())
            writer.write(out)
            await writer.drain()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                    continue
                if isinstance(event, h11.Response):
                    response = event
                if isinstance(event, h11.EndOfMessage):
                    conn.start_next_cycle()
                    return response

        answer = await exchange(
            "POST",
            [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Acp-One-Stream", "1"),
            ],
            body,
        )
        headers = {k.decode().lower(): v.decode() for k, v in answer.headers}
        assert answer.status_code == 200 and headers["acp-one-stream"] == "1"
        refused = await exchange(
            "GET",
            [
                ("Accept", "text/event-stream"),
                ("Acp-Connection-Id", headers["acp-connection-id"]),
                ("Acp-Session-Id", "any"),
            ],
            b"",
        )
        assert refused.status_code == 400
        writer.close()
        await app.aclose()
