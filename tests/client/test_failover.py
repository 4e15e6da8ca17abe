"""`FailoverTransport` against real agents (`SessionAgent` on a shared store) over in-memory
pipes: "the server behind the URL" is whichever agent `Servers.connect` starts next, and
`kill` ends the current one abruptly. The same behaviour through HAProxy with processes
killed for real is tests/remote/test_failover.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from acpstack import Client, ConnectionClosed, RequestError
from acpstack.agent import MemorySessionStore, SessionAgent, SessionBusy, Turn, connect_agent
from acpstack.client import (
    ClientRuntime,
    Failover,
    FailoverEvent,
    FailoverTransport,
    connect_client,
    is_connection_lost,
)
from acpstack.rpc import Connection
from acpstack.schema import v1 as acp
from acpstack.transports import Transport, memory_pair

pytestmark = pytest.mark.timeout(30)


class Gates:
    """What the test and the agents wait on (no sleeping)."""

    def __init__(self) -> None:
        self.holding = asyncio.Event()  # a turn is running and waits
        self.asked = asyncio.Event()  # the client got the agent's permission request
        self.deaf = asyncio.Event()  # the client hears nothing more (the test set it)
        self.unheard = asyncio.Event()  # the agent sent (and stored) what went unheard


class GatedAgent(SessionAgent):
    """'hold' keeps its turn running; 'ask' asks for permission; anything else is echoed."""

    gates: Gates

    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.say(f"begun {turn.text}")
        if turn.text == "hold":
            self.gates.holding.set()
            await asyncio.Event().wait()  # until the connection goes
        if turn.text == "unheard":
            await turn.say("heard")
            await turn.session.flush()
            self.gates.holding.set()
            await self.gates.deaf.wait()
            for n in range(5):
                await turn.say(f" unheard-{n}")
            await turn.session.flush()  # stored and written to the (deaf) client
            self.gates.unheard.set()
            await asyncio.Event().wait()  # until the connection goes
        if turn.text == "ask":
            tool = await turn.start_tool("a tool", kind="edit")
            decision = await turn.request_permission(tool)
            await turn.say(f"decided {decision.option_id}")
        await turn.say("done")
        return "end_turn"


class NoResumeAgent(GatedAgent):
    """Advertises load but not resume (so failover reattaches with session/load)."""

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        result = await super().initialize(params)
        caps = result.agent_capabilities
        assert isinstance(caps, acp.AgentCapabilities)
        assert isinstance(caps.session_capabilities, acp.SessionCapabilities)
        caps.session_capabilities.resume = None
        return result


class Servers:
    """Agents behind one address: each connection gets a new agent on the shared store."""

    def __init__(self, agent_class: type[GatedAgent] = GatedAgent, store: Any = None) -> None:
        self.store = store or MemorySessionStore()
        self.gates = Gates()
        self.agent_class = agent_class
        self.connections: list[Connection] = []
        self.refusing = False

    async def connect(self) -> Transport:
        if self.refusing:
            raise OSError("connection refused")
        client_end, agent_end = memory_pair()
        agent = self.agent_class(store=self.store)
        agent.gates = self.gates
        connection = connect_agent(agent, agent_end)
        connection.start()
        self.connections.append(connection)
        return client_end

    def refuse(self) -> None:
        """From now on no server answers at this address."""
        self.refusing = True

    async def kill(self) -> None:
        """The current server goes away at once (its pipe closes)."""
        await self.connections[-1].aclose()

    async def aclose(self) -> None:
        for connection in self.connections:
            await connection.aclose()


class Events(list[FailoverEvent]):
    """The failover events as reported, and an asyncio.Event per kind, set once one came."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    def append(self, event: FailoverEvent) -> None:
        super().append(event)
        self.seen[event.kind].set()


async def failover_client(
    servers: Servers,
    client: Client,
    events: list[FailoverEvent],
    wrap: Callable[[Transport], Any] = lambda first: first,
    **policy: Any,
) -> Any:
    """`client` connected through a FailoverTransport among `servers` (its first transport
    passed through `wrap`), reporting to `events`."""
    first = wrap(await servers.connect())
    options = {"first_delay": 0.001, "max_delay": 0.01, **policy}
    transport = FailoverTransport(
        servers.connect, first, Failover(on_event=events.append, **options)
    )
    return connect_client(client, transport)


@contextlib.asynccontextmanager
async def failing_over(
    servers: Servers, **policy: Any
) -> AsyncIterator[tuple[ClientRuntime, list[FailoverEvent]]]:
    """An initialized `ClientRuntime` whose connection fails over among `servers`, and the
    list of failover events it reported (still there after the block)."""
    runtime = ClientRuntime()
    events: list[FailoverEvent] = []
    conn = await failover_client(servers, runtime, events, **policy)
    async with conn.connection:
        await runtime.initialize()
        yield runtime, events


async def new_session(runtime: ClientRuntime) -> str:
    return (await runtime.new_session("/tmp")).session_id


async def lose_a_held_turn(
    servers: Servers,
    runtime: ClientRuntime,
    session_id: str,
    before_kill: Callable[[], object] = lambda: None,
) -> pytest.ExceptionInfo[RequestError]:
    """Start a turn that holds, kill its server (after `before_kill`), and return how the
    turn failed: it must fail with a RequestError."""
    running = asyncio.ensure_future(runtime.prompt(session_id, "hold"))
    await servers.gates.holding.wait()
    before_kill()
    await servers.kill()
    with pytest.raises(RequestError) as lost:
        await running
    return lost


def texts(runtime: ClientRuntime, session_id: str) -> list[str]:
    return [m.text for m in runtime.sessions[session_id].state.messages if m.speaker == "agent"]


async def test_a_turn_in_flight_is_lost_and_the_session_goes_on_elsewhere() -> None:
    servers = Servers()
    async with failing_over(servers) as (runtime, events):
        sid = await new_session(runtime)
        await runtime.prompt(sid, "hello")
        lost = await lose_a_held_turn(servers, runtime, sid)
        # sent again to the new server with its operation id, which finds it began: lost,
        # never run twice
        assert is_connection_lost(lost.value)
        assert lost.value.data["method"] == "session/prompt" and "operationId" in lost.value.data
        assert "began" in lost.value.message
        # The next turn is served by a new agent on the same store, same session.
        result = await runtime.prompt(sid, "again")
        assert result.stop_reason == "end_turn"
    assert len(servers.connections) == 2
    assert [e.kind for e in events] == ["lost", "reattached", "reconnected"]
    assert events[0].lost_requests == [] and events[2].sessions == [sid]  # (sent again)
    assert events[1].sessions == [sid]  # back, its prompt sent again at once
    assert texts(runtime, sid)[-1].endswith("begun againdone")
    stored = [e.payload for e in servers.store.events(sid)]
    assert any(b"begun hold" in p for p in stored)  # what the first agent had sent is kept
    assert sum(b'"text":"again"' in p for p in stored) == 1


class Deaf:
    """A client transport that stops passing on what it reads once `deaf` is set (what the
    server wrote is lost on its way, as in a socket buffer of a server that dies)."""

    def __init__(self, inner: Transport, deaf: asyncio.Event) -> None:
        self.inner = inner
        self.deaf = deaf

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def start_reading(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self.inner.start_reading(lambda data: None if self.deaf.is_set() else on_data(data), on_eof)


@pytest.mark.parametrize("version", [1, 2])
async def test_what_the_client_missed_of_a_lost_turn_is_sent_by_the_next_server(
    version: int,
) -> None:
    servers = Servers()
    heard, grew = asyncio.Event(), asyncio.Event()

    def on_update(_sid: str, update: Any) -> None:
        grew.set()
        if "'heard'" in str(update):
            heard.set()

    runtime = ClientRuntime(on_update=on_update, protocol_version=version)
    events = Events()
    deaf = servers.gates.deaf
    conn = await failover_client(servers, runtime, events, lambda first: Deaf(first, deaf))
    async with conn.connection:
        await runtime.initialize()
        sid = await new_session(runtime)
        await runtime.prompt(sid, "hello")
        running = asyncio.ensure_future(runtime.prompt(sid, "unheard"))
        await servers.gates.holding.wait()
        await heard.wait()
        servers.gates.deaf.set()
        await servers.gates.unheard.wait()
        await servers.kill()
        with pytest.raises(RequestError) as lost:
            await running
        assert is_connection_lost(lost.value)
        # v1: the prompt was sent again and found begun; v2: its turn ended at the break
        assert ("operationId" in lost.value.data) == (version == 1)
        # The new server sent the five updates the first one had stored but the client
        # never got, once each and in order, when the session was resumed (v1: before
        # the prompt, sent again, was answered as lost).
        await events.seen["reattached"].wait()
        whole = "begun unheardheard" + "".join(f" unheard-{n}" for n in range(5))
        while texts(runtime, sid)[-1] != whole and len(texts(runtime, sid)[-1]) < len(whole):
            grew.clear()
            await grew.wait()  # (the runtime applies what arrived in order)
        assert texts(runtime, sid)[-1] == whole
        assert (await runtime.prompt(sid, "again")).stop_reason == "end_turn"
        assert texts(runtime, sid)[-1] == "begun againdone"
    assert [e.kind for e in events] == ["lost", "reattached", "reconnected"]


class SlowGoodbye:
    """A transport whose close() waits until the test lets it go (a DELETE to a dead
    server through a proxy can take seconds)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.closing = asyncio.Event()
        self.may_close = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def close(self) -> None:
        self.closing.set()
        await self.may_close.wait()
        await self.inner.close()


async def test_a_slow_goodbye_to_the_broken_connection_does_not_hold_up_the_new_one() -> None:
    servers = Servers()
    runtime = ClientRuntime()
    events = Events()
    slow: list[SlowGoodbye] = []

    def wrap(first: Transport) -> SlowGoodbye:
        slow.append(SlowGoodbye(first))
        return slow[0]

    conn = await failover_client(servers, runtime, events, wrap)
    (first,) = slow
    async with conn.connection:
        try:
            await runtime.initialize()
            sid = await new_session(runtime)
            await servers.kill()
            # Reconnected while the old connection is still being closed; the session
            # goes on there.
            await asyncio.wait_for(events.seen["reconnected"].wait(), 10)
            assert first.closing.is_set() and not first.may_close.is_set()
            assert (await runtime.prompt(sid, "again")).stop_reason == "end_turn"
        finally:
            first.may_close.set()  # closing the failover transport waits for that goodbye
    assert [e.kind for e in events] == ["lost", "reattached", "reconnected"]


async def test_writes_made_while_reconnecting_go_out_once_their_sessions_are_back() -> None:
    servers = Servers()
    async with failing_over(servers) as (runtime, events):
        sids = [await new_session(runtime) for _ in range(3)]
        await lose_a_held_turn(servers, runtime, sids[0])
        # Sent at once, before the new connection exists: held, each sent once its
        # session is back.
        results = await asyncio.gather(*(runtime.prompt(s, f"next {s}") for s in sids))
        assert [r.stop_reason for r in results] == ["end_turn"] * 3
    back = [e.sessions[0] for e in events if e.kind == "reattached"]
    assert sorted(back) == sorted(sids)
    assert events[-1].kind == "reconnected" and sorted(events[-1].sessions) == sorted(sids)


async def test_an_agent_request_in_flight_is_cancelled_and_its_late_answer_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = Servers()
    first_ask, second_ask, cancelled = asyncio.Event(), asyncio.Event(), asyncio.Event()

    class Stubborn(Client):
        """Its first permission prompt outlives the cancel and answers (reject) only once
        the new agent has asked again, with the same request id."""

        calls = 0

        async def session_update(self, params: acp.SessionNotification) -> None:
            pass

        async def session_request_permission(
            self, params: acp.RequestPermissionRequest
        ) -> acp.RequestPermissionResponse:
            Stubborn.calls += 1
            choice = "allow_once"
            if Stubborn.calls == 1:
                first_ask.set()
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    cancelled.set()
                await second_ask.wait()
                choice = "reject_once"
            else:
                second_ask.set()
            return acp.RequestPermissionResponse(
                outcome=acp.SelectedPermissionOutcome(option_id=choice)
            )

    client = Stubborn()
    events: list[FailoverEvent] = []
    conn = await failover_client(servers, client, events)
    async with conn.connection:
        await conn.agent.initialize()
        sid = await conn.agent.session_new(acp.NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        prompt = acp.PromptRequest(session_id=sid.session_id, prompt=[acp.TextContent(text="ask")])
        running = asyncio.ensure_future(conn.agent.session_prompt(prompt))
        await first_ask.wait()
        await servers.kill()
        with pytest.raises(RequestError):
            await running
        await asyncio.wait_for(cancelled.wait(), 5)  # the client's handler was told
        result = await conn.agent.session_prompt(prompt)
        assert result.stop_reason == "end_turn"
    assert Stubborn.calls == 2
    history = b"".join(e.payload for e in servers.store.events(sid.session_id))
    # The new agent got the answer to its own request, and nothing meant for the old one.
    assert b"decided allow_once" in history and b"decided reject_once" not in history
    assert "response with unknown id" not in caplog.text


async def test_without_resume_the_session_is_loaded_and_its_replay_kept_from_the_client() -> None:
    servers = Servers(NoResumeAgent)
    async with failing_over(servers) as (runtime, events):
        sid = await new_session(runtime)
        await runtime.prompt(sid, "one")
        await lose_a_held_turn(servers, runtime, sid)
        await runtime.prompt(sid, "two")
    # The load replayed "one" and "hold" to the failover transport, which kept them back:
    # the client's view has each message once.
    assert texts(runtime, sid) == ["begun onedone", "begun hold", "begun twodone"]
    users = [m.text for m in runtime.sessions[sid].state.messages if m.speaker == "user"]
    assert users == ["one", "hold", "two"]
    assert events[-1].kind == "reconnected" and events[-1].sessions == [sid]


async def test_a_closed_session_is_not_reattached() -> None:
    servers = Servers()
    async with failing_over(servers) as (runtime, events):
        keep = await new_session(runtime)
        gone = await new_session(runtime)
        await runtime.close_session(gone)
        await lose_a_held_turn(servers, runtime, keep)
        await runtime.prompt(keep, "still here")
    assert events[-1].sessions == [keep]


class BusyStore(MemorySessionStore):
    """A shared store whose sessions stay busy for a while after a failover (as while the
    dead server's lease is not yet gone)."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals
        self.arm = False

    def arm_now(self) -> None:
        """From now on refuse sessions (`refusals` times)."""
        self.arm = True

    def acquire(self, session_id: str) -> None:
        if self.arm and self.refusals > 0:
            self.refusals -= 1
            raise SessionBusy(session_id)

    def release(self, session_id: str) -> None:
        pass


async def test_a_session_still_busy_elsewhere_is_asked_for_again() -> None:
    store = BusyStore(refusals=3)
    servers = Servers(store=store)
    async with failing_over(servers) as (runtime, events):
        sid = await new_session(runtime)
        await lose_a_held_turn(servers, runtime, sid, before_kill=store.arm_now)
        await runtime.prompt(sid, "after")
    assert store.refusals == 0 and events[-1].sessions == [sid]


async def test_busy_for_too_long_the_session_is_reported_not_reattached() -> None:
    store = BusyStore(refusals=10**6)
    servers = Servers(store=store)
    async with failing_over(servers, busy_timeout=0.05) as (runtime, events):
        sid = await new_session(runtime)
        await lose_a_held_turn(servers, runtime, sid, before_kill=store.arm_now)
        with pytest.raises(RequestError) as refused:  # the new agent does not have it
            await runtime.prompt(sid, "after")
    assert "Resource not found" in refused.value.message
    assert events[-1].kind == "reconnected" and events[-1].sessions == []
    assert "live on another node" in events[-1].missing[sid]
    assert f"session {sid} not reattached" in str(events[-1])


async def test_when_no_server_comes_back_the_connection_ends_with_the_reason() -> None:
    servers = Servers()
    async with failing_over(servers, attempts=3) as (runtime, events):
        sid = await new_session(runtime)
        await lose_a_held_turn(servers, runtime, sid, before_kill=servers.refuse)
        with pytest.raises(ConnectionClosed, match="3 attempts failed.*connection refused"):
            await runtime.prompt(sid, "nobody there")
    assert [e.kind for e in events] == ["lost", "failed"]


async def test_a_connection_that_never_initialized_just_ends() -> None:
    servers = Servers()
    runtime = ClientRuntime()
    events: list[FailoverEvent] = []
    conn = await failover_client(servers, runtime, events)
    async with conn.connection:
        await servers.kill()
        with pytest.raises(ConnectionClosed):
            await runtime.initialize()
    assert events == [] and len(servers.connections) == 1


async def test_over_v2_the_sessions_are_resumed_and_a_running_turn_fails_as_lost() -> None:
    """Protocol v2: `session/resume` is baseline (no capability to look for); a prompt is
    answered at once and its turn ends with an idle state, which a dead server never
    sends: the turn that was running fails as lost, not as an `end_turn`."""
    servers = Servers()
    events: list[FailoverEvent] = []
    runtime = ClientRuntime(protocol_version=2)
    conn = await failover_client(servers, runtime, events)
    async with conn.connection:
        await runtime.initialize()
        assert conn.connection.protocol_version == 2
        sid = await new_session(runtime)
        assert (await runtime.prompt(sid, "hello")).stop_reason == "end_turn"
        lost = await lose_a_held_turn(servers, runtime, sid)
        assert is_connection_lost(lost.value), lost.value
        assert "outcome is unknown" in lost.value.message
        assert (await runtime.prompt(sid, "again")).stop_reason == "end_turn"
        assert texts(runtime, sid)[-1] == "begun againdone"
    assert [e.kind for e in events] == ["lost", "reattached", "reconnected"]
    assert events[-1].sessions == [sid] and events[-1].missing == {}


class LoginAgent(GatedAgent):
    """Sessions only after a login (each new agent, i.e. each new connection, asks again)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(auth_methods=[acp.AuthMethodAgent(id="key", name="Key")], **kwargs)


@pytest.mark.parametrize("version", [1, 2])
async def test_the_login_is_made_again_on_the_new_connection(version: int) -> None:
    """`authenticate` (v1) or `auth/login` (v2) that worked is sent again after
    `initialize`, before the sessions are resumed (which a new agent refuses before it)."""
    servers = Servers(LoginAgent)
    events: list[FailoverEvent] = []

    async def choose(methods: list[Any]) -> str:
        return "key"

    runtime = ClientRuntime(protocol_version=version, choose_auth_method=choose)
    conn = await failover_client(servers, runtime, events)
    async with conn.connection:
        await runtime.initialize()
        sid = await new_session(runtime)  # refused, logged in, made
        await servers.kill()
        assert (await runtime.prompt(sid, "again")).stop_reason == "end_turn"
    back = [e for e in events if e.kind == "reconnected"]
    assert back and back[0].sessions == [sid] and back[0].missing == {}
