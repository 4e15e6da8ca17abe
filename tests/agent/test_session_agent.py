"""SessionAgent over real pipes to a real agent process with a real SQLite store.

Every test drives `peers/session_agent.py` with our ClientRuntime; restarts are new
processes on the same database file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

import acpstack.events as events
from acpstack import Client, ConnectionClosed, RequestError, spawn_agent
from acpstack.agent import SqliteSessionStore
from acpstack.client import ClientRuntime
from acpstack.client._connect import ClientConnection
from acpstack.schema import v1 as acp
from acpstack.transports import SubprocessTransport

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "session_agent.py")]
encode = msgspec.json.encode


class Recorder(ClientRuntime):
    """A client that keeps every update it received, and where each prompt answer fell."""

    def __init__(self, **kwargs: Any) -> None:
        self.log: list[tuple[str, Any]] = []
        self.grew = asyncio.Event()
        super().__init__(on_update=self._record, **kwargs)

    def _record(self, sid: str, update: Any) -> None:
        self.log.append((sid, update))
        self.grew.set()

    async def until(self, check: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait for the updates received so far to satisfy `check`."""
        async with asyncio.timeout(timeout):
            while not check():
                self.grew.clear()
                await self.grew.wait()

    def has_terminal_content(self, sid: str) -> bool:
        return any(
            isinstance(u, events.ToolCallUpdate)
            and any(isinstance(c, acp.Terminal) for c in (u.content or []))
            for s, u in self.log
            if s == sid
        )

    def updates(self, sid: str) -> list[bytes]:
        return [encode(u) for s, u in self.log if s == sid]

    def texts(self, sid: str) -> list[str]:
        return [
            u.content.text
            for s, u in self.log
            if s == sid and isinstance(u, events.AgentMessageChunk)
        ]

    async def prompt_marked(self, sid: str, text: str) -> acp.PromptResponse:
        """Prompt, then mark the log where the answer arrived."""
        result = await self.prompt(sid, text)
        self.log.append(("--answer--", sid))
        return result

    async def late_updates(self, sid: str) -> list[Any]:
        """What `sid`'s last answered turn sent after its answer, seen through a barrier (a
        new turn in the same session) rather than a quiet window: the agent writes a
        session's updates in order and the client handles them in that order, so anything
        the turn sent after its answer arrives before the barrier turn's own update."""
        await self.prompt(sid, "barrier")
        late = self.after_answer(sid)
        assert late[-1:] and late[-1].content.text == "echo: barrier", late
        return late[:-1]

    def after_answer(self, sid: str) -> list[Any]:
        marks = [i for i, (s, u) in enumerate(self.log) if s == "--answer--" and u == sid]
        return [u for s, u in self.log[marks[-1] + 1 :] if s == sid]


@asynccontextmanager
async def agent(db: Path, client: ClientRuntime, **env: str) -> AsyncIterator[ClientConnection]:
    async with spawn_agent(AGENT, client, env={"SESSION_AGENT_DB": str(db), **env}) as conn:
        await client.initialize()
        yield conn


def pid_of(conn: ClientConnection) -> int:
    assert isinstance(conn.transport, SubprocessTransport)
    return conn.transport.pid


async def test_capabilities_follow_the_store(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        caps = client.agent.capabilities
        assert caps is not None and caps.load_session is True
        sc = caps.session_capabilities
        assert isinstance(sc, acp.SessionCapabilities)
        assert sc.list is not msgspec.UNSET and sc.delete is not msgspec.UNSET
        assert sc.resume is not msgspec.UNSET and sc.close is not msgspec.UNSET


async def test_load_replays_exactly_what_was_sent_across_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = Recorder()
    async with agent(db, first) as conn:
        sid = (await first.new_session(str(tmp_path))).session_id
        await first.prompt(sid, "burst 30")
        await first.prompt(sid, "title Shopping list")
        await conn.agent.session_set_mode(acp.SetSessionModeRequest(session_id=sid, mode_id="code"))
        await first.prompt(sid, "hello")
        sent = first.updates(sid)
    assert len(sent) == 30 + 1 + 2 + 1  # chunks, title, mode + config option, echo

    second = Recorder()
    async with agent(db, second):
        loaded = await second.load_session(sid, str(tmp_path))
        replayed = second.updates(sid)
    assert loaded.modes is not None and loaded.modes.current_mode_id == "code"
    # The replay holds the user's prompts too, as user_message_chunk, each before its turn.
    agent_side = [u for u in replayed if b'"user_message_chunk"' not in u]
    assert agent_side == sent
    users = [
        msgspec.json.decode(u)["content"]["text"] for u in replayed if b'"user_message_chunk"' in u
    ]
    assert users == ["burst 30", "title Shopping list", "hello"]
    assert (
        replayed.index(next(u for u in replayed if b"hello" in u and b"user_message_chunk" in u))
        == len(replayed) - 2
    )
    state = second.sessions[sid].state
    assert state.title == "Shopping list" and state.current_mode_id == "code"


async def test_resume_does_not_replay_and_the_session_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = Recorder()
    async with agent(db, first):
        sid = (await first.new_session(str(tmp_path))).session_id
        await first.prompt(sid, "burst 5")
    second = Recorder()
    async with agent(db, second):
        await second.resume_session(sid, str(tmp_path))
        assert second.updates(sid) == []
        await second.prompt(sid, "after resume")
        assert second.texts(sid) == ["echo: after resume"]
    third = Recorder()
    async with agent(db, third):
        await third.load_session(sid, str(tmp_path))
        assert third.texts(sid)[-1] == "echo: after resume" and len(third.texts(sid)) == 6


async def test_resume_with_a_cursor_sends_what_came_after_it(tmp_path: Path) -> None:
    """The delivery cursor a failing-over client sends (`_meta["acpstack/after"]`): the
    recorded updates after it, in order, before the answer; no prompts; a bad cursor is
    -32602 and the session is not taken."""
    db = tmp_path / "s.db"
    first = Recorder()
    async with agent(db, first):
        sid = (await first.new_session(str(tmp_path))).session_id
        await first.prompt(sid, "burst 5")
    store = SqliteSessionStore(db)
    seqs = [e.seq for e in store.events(sid) if e.kind == "update"]
    store.close()
    second = Recorder()
    async with agent(db, second) as conn:
        for bad in (-1, "3", True, 1.5, None):
            with pytest.raises(RequestError) as refused:
                await conn.agent.session_resume(
                    acp.ResumeSessionRequest(
                        session_id=sid, cwd=str(tmp_path), meta={"acpstack/after": bad}
                    )
                )
            assert refused.value.code == -32602, bad
        await conn.agent.session_resume(
            acp.ResumeSessionRequest(
                session_id=sid, cwd=str(tmp_path), meta={"acpstack/after": seqs[-3]}
            )
        )
        assert second.texts(sid) == first.texts(sid)[-2:]  # the last two, once each
        await second.prompt(sid, "after")
        assert second.texts(sid)[-1] == "echo: after"


async def test_list_pages_over_1000_sessions_newest_first(tmp_path: Path) -> None:
    client = Recorder()
    other = tmp_path / "other"
    other.mkdir()
    async with agent(tmp_path / "s.db", client) as conn:
        created = [
            (
                await conn.agent.session_new(
                    acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
                )
            ).session_id
            for _ in range(1000)
        ]
        elsewhere = (
            await conn.agent.session_new(acp.NewSessionRequest(cwd=str(other), mcp_servers=[]))
        ).session_id
        seen: list[acp.SessionInfo] = []
        cursor: str | None = None
        pages = 0
        while True:
            page = await conn.agent.session_list(
                acp.ListSessionsRequest(cwd=str(tmp_path), cursor=cursor)
                if cursor
                else acp.ListSessionsRequest(cwd=str(tmp_path))
            )
            seen += page.sessions
            pages += 1
            if not isinstance(page.next_cursor, str):
                break
            cursor = page.next_cursor
        assert pages > 1
        ids = [s.session_id for s in seen]
        assert len(ids) == 1000 and set(ids) == set(created) and elsewhere not in ids
        stamps = [s.updated_at for s in seen]
        assert stamps == sorted(stamps, reverse=True)
        assert all(s.cwd == str(tmp_path) for s in seen)
        everything = await conn.agent.session_list(acp.ListSessionsRequest())
        assert everything.sessions[0].session_id == elsewhere  # the newest, whatever its cwd
        with pytest.raises(RequestError) as info:
            await conn.agent.session_list(acp.ListSessionsRequest(cursor="not a cursor"))
        assert info.value.code == -32602


async def test_titles_show_in_the_list(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client) as conn:
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "title Refactor the parser")
        assert client.sessions[sid].state.title == "Refactor the parser"
        listed = await conn.agent.session_list(acp.ListSessionsRequest())
        assert listed.sessions[0].title == "Refactor the parser"


async def test_delete_then_load_is_not_found_and_delete_is_idempotent(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client) as conn:
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "burst 3")
        await conn.agent.session_delete(acp.DeleteSessionRequest(session_id=sid))
        await conn.agent.session_delete(acp.DeleteSessionRequest(session_id=sid))
        for call in (
            client.load_session(sid, str(tmp_path)),
            client.resume_session(sid, str(tmp_path)),
        ):
            with pytest.raises(RequestError) as info:
                await call
            assert info.value.code == -32002
        with pytest.raises(RequestError) as info:
            await client.prompt(sid, "hello")
        assert info.value.code == -32002
        listed = await conn.agent.session_list(acp.ListSessionsRequest())
        assert sid not in [s.session_id for s in listed.sessions]


async def test_close_cancels_the_running_turn_and_frees_the_session(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(client.prompt(sid, "stream"))
        await client.until(lambda: len(client.texts(sid)) >= 3)
        await client.close_session(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        with pytest.raises(RequestError) as info:
            await client.agent.session_prompt(
                acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="x")])
            )
        assert info.value.code == -32002  # closed: not active until loaded or resumed
        await client.resume_session(sid, str(tmp_path))
        assert (await client.prompt(sid, "again")).stop_reason == "end_turn"


@pytest.mark.parametrize("pause", ["0.0005", ""], ids=["paced", "flat-out"])
async def test_kill_9_during_a_burst_loses_nothing_the_client_saw(
    tmp_path: Path, pause: str
) -> None:
    # Flat out, the writer commits large batches: what the client saw is still stored.
    db = tmp_path / "s.db"
    first = Recorder()
    async with agent(db, first) as conn:
        sid = (await first.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(first.prompt(sid, f"burst 1000000 {pause}".strip()))
        await first.until(lambda: len(first.texts(sid)) >= 300)
        os.kill(pid_of(conn), signal.SIGKILL)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(turn, 10)
        seen = first.texts(sid)
    assert len(seen) >= 300

    with contextlib.closing(sqlite3.connect(db)) as check:  # (sqlite3's own `with` does not close)
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    second = Recorder()
    async with agent(db, second):
        await second.load_session(sid, str(tmp_path))
        stored = second.texts(sid)
        # Every update the client saw is in the store, in order; nothing is garbled.
        assert stored[: len(seen)] == seen
        assert stored == [f"{i:08d} chunk" for i in range(len(stored))]
        # And the session is still usable.
        await second.prompt(sid, "after the crash")
        assert second.texts(sid)[-1] == "echo: after the crash"


async def test_cancel_during_a_permission_request(tmp_path: Path) -> None:
    asked = asyncio.Event()

    async def never_answer(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        asked.set()
        await asyncio.Event().wait()
        return None

    client = Recorder(ask=never_answer)
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(client.prompt_marked(sid, "permission"))
        await asyncio.wait_for(asked.wait(), 10)
        await client.cancel(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        # Never read as approval: the author's code either was cancelled while waiting or saw
        # the cancelled decision (which of the two depends on which message it read first).
        assert client.texts(sid) in ([], ["decision=cancelled"])
        assert await client.late_updates(sid) == []
        assert (await client.prompt(sid, "hello")).stop_reason == "end_turn"


class NoPermissionHandler(Client):
    """A client that only shows updates: `session/request_permission` gets `Client`'s
    default answer, -32601, which its docstring says agents treat as a refusal."""

    def __init__(self) -> None:
        self.updates: list[acp.SessionUpdate] = []

    async def session_update(self, params: acp.SessionNotification) -> None:
        self.updates.append(params.update)


async def test_a_client_without_a_permission_handler_refuses(tmp_path: Path) -> None:
    client = NoPermissionHandler()
    env = {"SESSION_AGENT_DB": str(tmp_path / "s.db")}
    async with spawn_agent(AGENT, client, env=env) as conn:
        await conn.agent.initialize()
        new = await conn.agent.session_new(acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[]))
        prompt = [acp.TextContent(text="permission")]
        result = await conn.agent.session_prompt(
            acp.PromptRequest(session_id=new.session_id, prompt=prompt), timeout=10
        )
        # The turn goes on with a refusal (it used to end with -32603).
        assert result.stop_reason == "end_turn"
        said = [u.content.text for u in client.updates if isinstance(u, acp.AgentMessageChunk)]
        assert said == ["decision=reject"]
        prompt = [acp.TextContent(text="hello")]
        result = await conn.agent.session_prompt(
            acp.PromptRequest(session_id=new.session_id, prompt=prompt), timeout=10
        )
        assert result.stop_reason == "end_turn"


async def test_cancel_during_a_terminal_wait_kills_and_releases_it(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(client.prompt_marked(sid, "terminal 30"))
        await client.until(lambda: client.has_terminal_content(sid))  # the agent waits on it
        assert len(client.terminals.terminal_ids(sid)) == 1
        await client.cancel(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        assert await client.late_updates(sid) == []
        assert (
            client.terminals.terminal_ids(sid) == []
        )  # released by the agent even though it was cancelled
        assert not any("exit=" in t for t in client.texts(sid))


async def test_a_cancelled_turn_leaves_no_tool_call_open(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(client.prompt(sid, "terminal 30"))
        await client.until(lambda: client.has_terminal_content(sid))
        [call] = client.sessions[sid].state.tool_calls.values()
        assert call.status == "in_progress"
        await client.cancel(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        # Its final state came before the answer: on v1's wire `failed`, marked cancelled
        # (v1 has no `cancelled` status), which the client's state reads as `cancelled`.
        assert call.status == "cancelled"
        last = [u for s, u in client.log if s == sid and isinstance(u, events.ToolCallUpdate)][-1]
        assert isinstance(last.meta, dict) and last.meta.get("acpstack/status") == "cancelled"


async def test_cancel_during_streaming_no_update_after_the_answer(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(client.prompt_marked(sid, "stream"))
        await client.until(lambda: len(client.texts(sid)) >= 50)
        await client.cancel(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        texts = client.texts(sid)
        assert texts == [f"{i:08d} stream" for i in range(len(texts))]
        assert await client.late_updates(sid) == []


async def test_cancel_request_of_a_prompt_and_an_author_that_raises_while_cancelled(
    tmp_path: Path,
) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(client.prompt(sid, "raise-on-cancel"))
        await client.until(lambda: "waiting" in client.texts(sid))
        await client.cancel(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        # $/cancel_request of the prompt: the agent stops the turn too, and stays usable.
        turn = asyncio.create_task(client.prompt(sid, "stream"))
        await client.until(lambda: len(client.texts(sid)) >= 5)
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        # The session stays usable once the agent has ended the cancelled turn ($/cancel_request
        # is a request to stop, not a wait for it), and the stream stopped: updates of one
        # session arrive in order, so a chunk of the stream after the next turn's echo would
        # be one sent after that turn began.
        async with asyncio.timeout(10):
            while True:
                try:
                    assert (await client.prompt(sid, "hello")).stop_reason == "end_turn"
                    break
                except RequestError as exc:
                    assert "already running" in exc.message, exc
                    await asyncio.sleep(0.01)
        texts = client.texts(sid)
        echo = texts.index("echo: hello")
        assert not [text for text in texts[echo:] if text.endswith(" stream")], texts[echo:]


async def test_a_failing_turn_answers_an_error_and_the_session_stays_usable(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        with pytest.raises(RequestError) as info:
            await client.prompt(sid, "fail")
        assert info.value.code == -32603 and "exploded" not in str(info.value.message)
        assert (await client.prompt(sid, "hello")).stop_reason == "end_turn"


async def test_a_second_concurrent_prompt_is_refused(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client):
        sid = (await client.new_session(str(tmp_path))).session_id
        slow = asyncio.create_task(client.prompt(sid, "slow 1"))
        await client.until(lambda: "slow" in client.texts(sid))  # the turn is running
        with pytest.raises(RequestError) as info:
            await client.prompt(sid, "hello")
        assert info.value.code == -32602 and "already running" in info.value.message
        assert (await slow).stop_reason == "end_turn"
        assert (await client.prompt(sid, "hello")).stop_reason == "end_turn"


async def test_modes_and_the_mode_config_option_stay_in_sync(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client) as conn:
        new = await client.new_session(str(tmp_path))
        sid = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "ask"
        options = {o.id: o for o in new.config_options or []}
        assert options["mode"].category == "mode" and options["mode"].current_value == "ask"
        assert options["verbose"].current_value is False

        await conn.agent.session_set_mode(acp.SetSessionModeRequest(session_id=sid, mode_id="code"))
        state = client.sessions[sid].state
        assert state.current_mode_id == "code"
        assert {o.id: o.current_value for o in state.config_options}["mode"] == "code"

        result = await conn.agent.session_set_config_option(
            acp.SetSessionConfigOptionRequest(session_id=sid, config_id="mode", value="ask")
        )
        assert {o.id: o.current_value for o in result.config_options}["mode"] == "ask"
        assert state.current_mode_id == "ask"

        for bad in (
            acp.SetSessionConfigOptionRequest(session_id=sid, config_id="mode", value="nope"),
            acp.SetSessionConfigOptionRequest(session_id=sid, config_id="verbose", value="yes"),
            acp.SetSessionConfigOptionRequest(session_id=sid, config_id="missing", value="x"),
        ):
            with pytest.raises(RequestError) as info:
                await conn.agent.session_set_config_option(bad)
            assert info.value.code == -32602
        result = await conn.agent.session_set_config_option(
            acp.SetSessionConfigOptionRequest(
                session_id=sid, config_id="verbose", type="boolean", value=True
            )
        )
        assert {o.id: o.current_value for o in result.config_options} == {
            "mode": "ask",
            "verbose": True,
        }
    # Mode and options persist.
    again = Recorder()
    async with agent(tmp_path / "s.db", again):
        resumed = await again.resume_session(sid, str(tmp_path))
        assert resumed.modes is not None and resumed.modes.current_mode_id == "ask"
        assert {o.id: o.current_value for o in resumed.config_options or []} == {
            "mode": "ask",
            "verbose": True,
        }


async def test_authentication_is_required_until_authenticate(tmp_path: Path) -> None:
    plain = Recorder()
    async with agent(tmp_path / "s.db", plain, SESSION_AGENT_AUTH="1"):
        assert [m.id for m in plain.agent.initialize_result.auth_methods] == ["key"]  # type: ignore[union-attr]
        with pytest.raises(RequestError) as info:
            await plain.new_session(str(tmp_path))
        assert info.value.code == -32000
        with pytest.raises(RequestError) as info:
            await plain.agent.authenticate(acp.AuthenticateRequest(method_id="wrong"))
        assert info.value.code == -32602

    async def choose(methods: list[Any]) -> str | None:
        return str(methods[0].id)

    client = Recorder(choose_auth_method=choose)
    async with agent(tmp_path / "s.db", client, SESSION_AGENT_AUTH="1") as conn:
        sid = (await client.new_session(str(tmp_path))).session_id  # -32000, authenticate, retry
        assert (await client.prompt(sid, "hi")).stop_reason == "end_turn"
        await conn.agent.logout()
        with pytest.raises(RequestError) as info:
            await conn.agent.session_new(acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[]))
        assert info.value.code == -32000


async def test_relative_cwd_is_invalid_params(tmp_path: Path) -> None:
    client = Recorder()
    async with agent(tmp_path / "s.db", client) as conn:
        with pytest.raises(RequestError) as info:
            await conn.agent.session_new(acp.NewSessionRequest(cwd="relative/dir", mcp_servers=[]))
        assert info.value.code == -32602


async def test_fork_copies_the_history_under_a_new_id(tmp_path: Path) -> None:
    from acpstack.schema import v1_unstable as acpu

    client = Recorder()
    db = tmp_path / "s.db"
    async with spawn_agent(
        AGENT,
        client,
        env={"SESSION_AGENT_DB": str(db), "SESSION_AGENT_UNSTABLE": "1"},
        unstable=True,
    ) as conn:
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "burst 4")
        forked = await conn.connection.request(
            "session/fork",
            acpu.ForkSessionRequest(session_id=sid, cwd=str(tmp_path), mcp_servers=[]),
        )
        new_id = forked.session_id
        assert new_id != sid
        client.register_session(new_id, str(tmp_path))
        await client.prompt(new_id, "only in the fork")
    again = Recorder()
    async with agent(db, again):
        await again.load_session(new_id, str(tmp_path))
        assert again.texts(new_id) == [f"{i:08d} chunk" for i in range(4)] + [
            "echo: only in the fork"
        ]
        await again.load_session(sid, str(tmp_path))
        assert "echo: only in the fork" not in again.texts(sid)
