"""`SessionAgent` on a store shared by several processes (`SessionLeases`): two agents,
each on its own `PostgresSessionStore` (two nodes), one throwaway PostgreSQL server.
What a client is told while another node has the session, and when a node loses it."""

from __future__ import annotations

import pytest

from acpstack.agent import SESSION_BUSY, PostgresSessionStore, SessionAgent, Turn
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair
from acpstack.wire import RequestError
from tools.cluster._postgres import wait_for_release

pytestmark = pytest.mark.timeout(60)


class EchoAgent(SessionAgent):
    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.say(f"echo: {turn.text}")
        return "end_turn"


def busy(error: RequestError, session_id: str) -> bool:
    return error.code == SESSION_BUSY and error.data == {
        "reason": "session_busy",
        "sessionId": session_id,
    }


async def test_load_resume_delete_and_fork_while_another_node_has_the_session(
    postgres_url: str,
) -> None:
    with PostgresSessionStore(postgres_url) as one, PostgresSessionStore(postgres_url) as two:
        first, second = ClientRuntime(), ClientRuntime()
        async with (
            connected_pair(EchoAgent(store=one), first, unstable=True),
            connected_pair(EchoAgent(store=two), second, unstable=True) as pair_two,
        ):
            await first.initialize()
            await second.initialize()
            sid = (await first.new_session("/tmp")).session_id
            await first.prompt(sid, "hello")
            for attempt in (second.load_session, second.resume_session):
                with pytest.raises(RequestError) as refused:
                    await attempt(sid, "/tmp")
                assert busy(refused.value, sid)
            with pytest.raises(RequestError) as refused:
                await pair_two.agent.session_delete(acp.DeleteSessionRequest(session_id=sid))
            assert busy(refused.value, sid)
            # A fork only reads the source: the copy is the second node's own.
            fork = await pair_two.client_connection.request("session/fork", _fork_request(sid))
            assert one.get(fork.session_id) is not None
            assert two.holder(fork.session_id) == two.name
            await first.close_session(sid)
            await second.load_session(sid, "/tmp")
            assert two.holder(sid) == two.name


async def test_a_turn_on_a_node_that_lost_the_session_is_refused_and_the_session_dropped(
    postgres_url: str,
) -> None:
    with PostgresSessionStore(postgres_url) as one, PostgresSessionStore(postgres_url) as two:
        first, second = ClientRuntime(), ClientRuntime()
        agent_one = EchoAgent(store=one)
        async with (
            connected_pair(agent_one, first),
            connected_pair(EchoAgent(store=two), second),
        ):
            await first.initialize()
            await second.initialize()
            sid = (await first.new_session("/tmp")).session_id
            # The first node is cut off from the database (its presence connection ends):
            # the second may take the session over.
            assert one._presence is not None
            one._presence.close()
            wait_for_release(postgres_url, one.key)
            await second.resume_session(sid, "/tmp")
            with pytest.raises(RequestError) as refused:
                await first.prompt(sid, "am I still live?")
            assert busy(refused.value, sid)
            assert sid not in agent_one.sessions  # no longer live there
            assert (await second.prompt(sid, "here")).stop_reason == "end_turn"
            stored = [e.payload for e in two.events(sid)]
            assert not any(b"am I still live?" in p for p in stored)


def _fork_request(session_id: str) -> object:
    from acpstack.schema import v1_unstable as acpu

    return acpu.ForkSessionRequest(session_id=session_id, cwd="/tmp", mcp_servers=[])
