"""`acp.http` and `acp.ws` on acpstack's remote transports and server: code written for the
official SDK's remote API (create_asgi_app, create_http_stream, create_websocket_stream)
completes a turn with a streamed update and a permission request, over a real socket on
127.0.0.1; bad input gets its HTTP status."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestPermissionResponse,
    connect_to_agent,
    text_block,
    update_agent_message,
)
from acp.http.asgi import create_asgi_app
from acp.http.client import create_http_stream
from acp.http.server import AcpServer
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate
from acp.ws.client import create_websocket_stream

from acpstack.server import bind_socket, serve_remote

pytest.importorskip("uvicorn")


class Agent:
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="s1")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        await self.conn.session_update(session_id, update_agent_message(text_block("hello")))
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="t1", title="run"),
            options=[PermissionOption(option_id="ok", name="Allow", kind="allow_once")],
        )
        return PromptResponse(
            stop_reason="end_turn" if answer.outcome.outcome == "selected" else "refusal"
        )


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, **kwargs: Any) -> RequestPermissionResponse:
        self.asked += 1
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id="ok", outcome="selected"))


@contextlib.asynccontextmanager
async def served() -> AsyncIterator[str]:
    """`create_asgi_app` on uvicorn (acpstack's `serve_remote`), on a free port."""
    app = create_asgi_app(lambda conn: Agent())
    sock = bind_socket("127.0.0.1", 0)
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_remote(
            app.server.app, asgi=app, sock=sock, on_ready=lambda _s: ready.set(), stop=stop
        )
    )
    await asyncio.wait_for(ready.wait(), 10)
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}/acp"
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


async def turn(transport: Any) -> Client:
    client = Client()
    conn = connect_to_agent(client, transport)
    try:
        await asyncio.wait_for(conn.initialize(protocol_version=1), 10)
        session = await asyncio.wait_for(conn.new_session(cwd="/", mcp_servers=[]), 10)
        done = await asyncio.wait_for(conn.prompt(session.session_id, [text_block("hi")]), 10)
        assert done.stop_reason == "end_turn"
    finally:
        await conn.close()
        await transport.close()
    return client


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_a_turn_over_each_profile(profile: str) -> None:
    async with served() as where:
        if profile == "http":
            transport: Any = create_http_stream(f"http://{where}")
        else:
            transport = await create_websocket_stream(f"ws://{where}")
        client = await turn(transport)
    assert [u.content.text for u in client.updates] == ["hello"]
    assert client.asked == 1


async def test_bad_requests_get_their_status() -> None:
    server = AcpServer(lambda conn: Agent())
    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        wrong_type = await server.handle_post(
            init, content_type="text/plain", connection_id=None, session_id=None
        )
        assert wrong_type.status == 415
        batch = await server.handle_post(
            [init], content_type="application/json", connection_id=None, session_id=None
        )
        assert batch.status == 501
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}}
        unknown = await server.handle_post(
            new, content_type="application/json", connection_id="nope", session_id=None
        )
        assert unknown.status == 404
        assert (await server.handle_delete(connection_id=None)).status == 400
        assert server.validate_stream(connection_id="nope", session_id=None).status == 404  # type: ignore[union-attr]
    finally:
        await server.close()


async def test_an_agent_factory_that_fails_is_answered_502() -> None:
    def broken(conn: Any) -> Any:
        raise RuntimeError("no agent today")

    server = AcpServer(broken)
    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        answer = await server.handle_post(
            init, content_type="application/json", connection_id=None, session_id=None
        )
        assert answer.status == 502
        assert answer.body["error"]["code"] == -32603
        assert not server.registry._connections
    finally:
        await server.close()
