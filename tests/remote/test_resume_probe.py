"""When every stream of an HTTP connection breaks at once (its server died behind a load
balancer), one of them asks whether the connection can be resumed; the others wait for
that answer instead of each asking the surviving server again (a failover's burst of
requests lands on those servers), and no DELETE follows the server's 404. Real servers on uvicorn, a real TCP proxy between."""

from __future__ import annotations

import asyncio

import pytest
from _faulty import FaultyProxy
from _serving import load_scripted, running

from acpstack.client import ClientRuntime, connect_remote
from acpstack.server import AgentServer

pytestmark = pytest.mark.timeout(120)
SESSIONS = 4


async def test_one_resume_question_when_every_stream_breaks_and_the_server_is_gone() -> None:
    agent = load_scripted().ScriptedAgent
    async with (
        running(AgentServer(agent)) as first,
        running(AgentServer(agent)) as second,
    ):
        proxy = FaultyProxy(_port(first))
        port = await proxy.start()
        try:
            runtime = ClientRuntime()
            url = f"http://127.0.0.1:{port}/acp"
            async with connect_remote(url, runtime, one_stream=False) as conn:
                await runtime.initialize()
                for _ in range(SESSIONS):
                    await runtime.new_session("/tmp")
                # the POSTs' connection, the connection's stream and one per session
                async with asyncio.timeout(30):
                    while proxy.accepted < SESSIONS + 2:
                        await asyncio.sleep(0.01)
                await asyncio.sleep(0)
                opened = proxy.accepted
                proxy.target_port = _port(second)  # the first server is gone from the route
                proxy.reset_all()
                async with asyncio.timeout(60):
                    await conn.connection.wait_closed()
                reason = conn.transport.close_reason() or ""
                assert "could not be resumed" in reason and "404" in reason, reason
            # one GET asked the second server (which does not know the connection); closing
            # sent no DELETE after that 404 (it would have come on a new TCP connection)
            assert proxy.accepted - opened == 1
        finally:
            await proxy.aclose()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])
