"""`SessionAgent` on a store shared by several processes (`SessionLeases`): two agents,
each on its own `PostgresSessionStore` (two nodes), one throwaway PostgreSQL server.
What a client is told while another node has the session, and when a node loses it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import acpstack.events as ev
from acpstack.agent import SESSION_BUSY, PostgresSessionStore, SessionAgent, Turn
from acpstack.client import AgentPeer, ClientRuntime
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu
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
            for method, request in [
                ("session/archive", acpu.ArchiveSessionRequest(session_id=sid)),
                ("session/set_title", acpu.SetSessionTitleRequest(session_id=sid, title="t")),
            ]:
                with pytest.raises(RequestError) as refused:
                    await pair_two.client_connection.request(method, request)
                assert busy(refused.value, sid), method
            # A fork only reads the source: the copy is the second node's own.
            fork = await pair_two.client_connection.request("session/fork", _fork_request(sid))
            assert one.get(fork.session_id) is not None
            assert two.holder(fork.session_id) == two.name
            await first.close_session(sid)
            await second.load_session(sid, "/tmp")
            assert two.holder(sid) == two.name


@pytest.mark.parametrize("version", [1, 2])
async def test_a_turn_on_a_node_that_lost_the_session_is_refused_and_the_session_dropped(
    postgres_url: str, version: int
) -> None:
    with PostgresSessionStore(postgres_url) as one, PostgresSessionStore(postgres_url) as two:
        first, second = ClientRuntime(protocol_version=version), ClientRuntime()
        agent_one = EchoAgent(store=one)
        async with (
            connected_pair(agent_one, first),
            connected_pair(EchoAgent(store=two), second),
        ):
            await first.initialize()
            await second.initialize()
            sid = (await first.new_session("/tmp")).session_id
            cut_off(one, postgres_url)
            await second.resume_session(sid, "/tmp")
            with pytest.raises(RequestError) as refused:
                await first.prompt(sid, "am I still live?")
            assert busy(refused.value, sid)  # (a JSON-RPC error on v1 and v2 alike)
            assert sid not in agent_one.sessions  # no longer live there
            assert (await second.prompt(sid, "here")).stop_reason == "end_turn"
            stored = [e.payload for e in two.events(sid)]
            assert not any(b"am I still live?" in p for p in stored)


class GateAgent(SessionAgent):
    """Its turn waits at a gate, then says something (a write to the store)."""

    def __init__(self, store: PostgresSessionStore) -> None:
        super().__init__(store=store)
        self.in_turn = asyncio.Event()
        self.gate = asyncio.Event()

    async def prompt(self, turn: Turn) -> acp.StopReason:
        self.in_turn.set()
        await self.gate.wait()
        await turn.say("too late")
        return "end_turn"


def cut_off(store: PostgresSessionStore, url: str) -> None:
    """The node loses the database (its presence connection ends): others may take over."""
    assert store._presence is not None
    store._presence.close()
    wait_for_release(url, store.key)


@pytest.mark.parametrize("version", [1, 2])
async def test_a_node_that_loses_the_session_mid_turn_ends_the_turn_busy(
    postgres_url: str, version: int
) -> None:
    with PostgresSessionStore(postgres_url) as one, PostgresSessionStore(postgres_url) as two:
        first, second = ClientRuntime(protocol_version=version), ClientRuntime()
        agent_one = GateAgent(one)
        async with (
            connected_pair(agent_one, first),
            connected_pair(EchoAgent(store=two), second),
        ):
            await first.initialize()
            await second.initialize()
            sid = (await first.new_session("/tmp")).session_id
            running = asyncio.ensure_future(first.prompt(sid, "go"))
            await asyncio.wait_for(agent_one.in_turn.wait(), 10)
            cut_off(one, postgres_url)
            await second.resume_session(sid, "/tmp")
            agent_one.gate.set()  # its next write is refused: the turn ends SESSION_BUSY
            with pytest.raises(RequestError) as refused:
                await asyncio.wait_for(running, 10)
            assert busy(refused.value, sid)  # (v2: the error of the turn's idle update)
            assert sid not in agent_one.sessions
            assert two.holder(sid) == two.name
            assert not any(b"too late" in e.payload for e in two.events(sid))


def _fork_request(session_id: str) -> object:
    return acpu.ForkSessionRequest(session_id=session_id, cwd="/tmp", mcp_servers=[])


class ModalAgent(EchoAgent):
    def __init__(self, store: PostgresSessionStore) -> None:
        super().__init__(
            store=store,
            modes=[("code", "Code"), ("ask", "Ask")],
            config_options=[
                acp.SessionConfigOption(
                    id="think", name="Think", type="boolean", current_value=False
                )
            ],
        )


@pytest.mark.parametrize(
    ("version", "change"),
    [(1, "mode"), (1, "option"), (1, "title"), (2, "option")],
)
async def test_a_setting_on_a_node_that_lost_the_session_is_refused_as_a_turn_is(
    postgres_url: str, version: int, change: str
) -> None:
    """set_mode / set_config_option / set_title write the session: on a node that lost it
    they answer SESSION_BUSY and drop it there, as session/prompt does (never -32603)."""
    with PostgresSessionStore(postgres_url) as one, PostgresSessionStore(postgres_url) as two:
        first = ClientRuntime(protocol_version=version)
        second = ClientRuntime()
        agent_one = ModalAgent(one)
        async with (
            connected_pair(agent_one, first, unstable=change == "title") as pair_one,
            connected_pair(ModalAgent(two), second),
        ):
            await first.initialize()
            await second.initialize()
            sid = (await first.new_session("/tmp")).session_id
            cut_off(one, postgres_url)
            await second.resume_session(sid, "/tmp")
            with pytest.raises(RequestError) as refused:
                await _change(pair_one.agent, sid, version, change)
            assert busy(refused.value, sid)
            assert sid not in agent_one.sessions  # no longer live there
            assert two.get(sid).config_values == {"think": False}
            assert two.get(sid).mode_id == "code"


async def _change(agent: AgentPeer, sid: str, version: int, change: str) -> None:
    if change == "mode":
        await agent.session_set_mode(acp.SetSessionModeRequest(session_id=sid, mode_id="ask"))
    elif change == "title":
        title = acpu.SetSessionTitleRequest(session_id=sid, title="t")
        await agent.connection.request("session/set_title", title)
    elif version == 1:
        option = acp.SetSessionConfigOptionRequest(
            session_id=sid, config_id="think", type="boolean", value=True
        )
        await agent.session_set_config_option(option)
    else:
        from acpstack.schema import v2

        request = v2.SetSessionConfigOptionRequest(
            session_id=sid, config_id="think", type="boolean", value=True
        )
        await agent.call("session/set_config_option", request)


def test_a_dead_nodes_sessions_are_taken_over_side_by_side(postgres_url: str) -> None:
    """After a node dies, the survivors take its sessions over concurrently (the resumes of
    a failover): one takeover in progress does not make another look busy. Here a takeover
    by a third node is held open (its transaction not yet committed) while this node
    takes another of the dead node's sessions."""
    import psycopg

    from acpstack.agent import SessionRecord
    from acpstack.agent._store._postgres import _ACQUIRE

    with PostgresSessionStore(postgres_url) as dead, PostgresSessionStore(postgres_url) as alive:
        for sid in ("s1", "s2"):
            dead.create(SessionRecord(sid, "/tmp"))
            dead.acquire(sid)
        cut_off(dead, postgres_url)
        with psycopg.connect(postgres_url) as third:  # a transaction, left open below
            taken = third.execute(
                _ACQUIRE, {"sid": "s1", "me": alive.key + 1, "name": "third"}
            ).fetchone()
            assert taken is not None  # the third node is taking s1 over, not committed yet
            alive.acquire("s2")  # not refused as busy
            assert alive.holder("s2") is not None
            third.rollback()


async def test_a_resume_with_a_cursor_reads_the_events_only_when_some_came_after_it(
    postgres_url: str,
) -> None:
    """A failover's resume names the last update its client got (`acpstack/after`). The
    node taking the session over learns the session's last seq with its lease, so when
    nothing came after the cursor (the usual case) it reads no events at all."""
    with PostgresSessionStore(postgres_url) as one, PostgresSessionStore(postgres_url) as two:
        first = ClientRuntime()
        async with connected_pair(EchoAgent(store=one), first):
            await first.initialize()
            sid = (await first.new_session("/tmp")).session_id
            await first.prompt(sid, "a")
            await first.prompt(sid, "b")
        seqs = [e.seq for e in one.events(sid) if e.kind == "update"]
        reads: list[int] = []
        events_of = two.events

        def counted(session_id: str, after_seq: int = 0) -> Any:
            reads.append(after_seq)
            return events_of(session_id, after_seq)

        two.events = counted  # type: ignore[method-assign]
        for after, replayed, read in ((seqs[-1], [], []), (seqs[-2], ["echo: b"], [seqs[-2]])):
            texts: list[str] = []
            reads.clear()

            def on_update(_sid: str, update: object, texts: list[str] = texts) -> None:
                if isinstance(update, ev.AgentMessageChunk):
                    texts.append(getattr(update.content, "text", ""))

            runtime = ClientRuntime(on_update=on_update)
            async with connected_pair(EchoAgent(store=two), runtime) as pair:
                await runtime.initialize()
                await pair.agent.session_resume(
                    acp.ResumeSessionRequest(
                        session_id=sid, cwd="/tmp", meta={"acpstack/after": after}
                    )
                )
                assert texts == replayed
                assert reads == read
