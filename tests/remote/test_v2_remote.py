"""Protocol v2 over the remote transports: our v2 client through `AgentServer` (both
profiles, a real socket) to an agent in the server's process and to a stdio agent process
behind it; and a v1 client through the same server to the same agents."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _serving import running

import acpstack.events as events
from acpstack.client import ClientRuntime, connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "v2"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "v2" / "peers"))
from _lines import command_agent  # noqa: E402

pytestmark = pytest.mark.timeout(30)
PROFILES = ["http", "ws"]


def url_for(base: str, profile: str) -> str:
    return base if profile == "http" else "ws" + base[4:]


@pytest.fixture(params=["in-process", "stdio"])
async def base(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "in-process":
        from command_agent import CommandAgent

        from acpstack.agent import SqliteSessionStore

        def make() -> Any:
            agent = CommandAgent(store=store, modes=[("code", "Code")])
            agent.protocol_versions = (1, 2)
            return agent

        with SqliteSessionStore(str(tmp_path / "sessions.db")) as store:
            app = AgentServer(make)
            async with running(app) as url:
                yield url
    else:
        argv, env = command_agent(tmp_path / "sessions.db", "1,2")
        app = AgentServer(argv, env={**os.environ, **env})
        async with running(app) as url:
            yield url
    assert app.connections == {}, "every connection ends with its client"


async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
    return request.options[0]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("asked", [2, 1])
async def test_a_turn_in_the_version_the_client_asked_for(
    base: str, profile: str, asked: int
) -> None:
    texts: list[str] = []
    runtime = ClientRuntime(
        ask=allow,
        protocol_version=asked,
        on_update=lambda sid, update: (
            texts.append(getattr(update.content, "text", ""))
            if isinstance(update, events.AgentMessageChunk)
            else None
        ),
    )
    async with connect_remote(url_for(base, profile), runtime):
        await runtime.initialize()
        assert runtime.agent.protocol_version == asked
        session = (await runtime.new_session(os.getcwd())).session_id
        done = await asyncio.wait_for(runtime.prompt(session, "say hello over the wire"), 10)
        assert done.stop_reason == "end_turn"
        assert "hello over the wire" in "".join(texts)
        done = await asyncio.wait_for(runtime.prompt(session, "permission"), 10)
        assert done.stop_reason == "end_turn"
        assert texts[-1] == "decision=allow", texts


PROXY_AGENT = [
    sys.executable,
    str(Path(__file__).resolve().parents[1] / "e2e" / "peers" / "proxy_nes_agent.py"),
]


@pytest.mark.parametrize("profile", PROFILES)
async def test_a_conductor_opens_a_remote_connection_with_proxy_initialize(profile: str) -> None:
    # The server and the client transports take `proxy/initialize` as the first message of a
    # connection, as they take `initialize`.
    from acpstack.schema import v1_unstable as acpu

    app = AgentServer(PROXY_AGENT)
    async with running(app) as base:
        client = ClientRuntime()
        async with connect_remote(url_for(base, profile), client, unstable=True) as conn:
            init = await conn.agent.proxy_initialize(
                acpu.InitializeProxyRequest(
                    protocol_version=1, client_capabilities=client.capabilities()
                )
            )
            assert init.protocol_version == 1
            seen = await conn.agent.call("_seen", {"count": 1})
            assert seen == [["proxy/initialize", 1]]
    assert app.connections == {}
