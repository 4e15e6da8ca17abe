"""Every ACP v1 method end to end: our Agent and our Client, over real pipes to a real process."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import CapabilityError, Client, RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import STABLE_METHODS, UNSET
from acpstack.schema import v1 as acp

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "full_agent.py")]


class FullClient(ClientRuntime):
    def __init__(self) -> None:
        async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
            return request.options[0]

        async def choose(methods: list[Any]) -> str | None:
            return str(methods[0].id)

        super().__init__(ask=ask, choose_auth_method=choose, on_update=self._saw)
        self.waiting = asyncio.Event()  # the agent said "waiting": its turn waits to be cancelled
        self.elicitations: list[acp.CreateElicitationRequest] = []
        self.completed: list[str] = []
        self.ext: list[tuple[str, Any]] = []

    def _saw(self, session_id: str, update: Any) -> None:
        if (
            isinstance(update, events.AgentMessageChunk)
            and getattr(update.content, "text", "") == "waiting"
        ):
            self.waiting.set()

    async def turn_waiting(self) -> None:
        await asyncio.wait_for(self.waiting.wait(), 10)
        self.waiting.clear()

    def capabilities(self) -> acp.ClientCapabilities:
        caps = super().capabilities()
        caps.elicitation = acp.ElicitationCapabilities(form=acp.ElicitationFormCapabilities())
        return caps

    async def elicitation_create(
        self, params: acp.CreateElicitationRequest
    ) -> acp.CreateElicitationResponse:
        self.elicitations.append(params)
        return acp.CreateElicitationResponse(action="accept", content={"name": "Ada"})

    async def elicitation_complete(self, params: acp.CompleteElicitationNotification) -> None:
        self.completed.append(params.elicitation_id)

    async def ext_method(self, method: str, params: Any) -> Any:
        self.ext.append((method, params))
        return {"client": "pong"}

    async def ext_notification(self, method: str, params: Any) -> None:
        self.ext.append((method, params))


def last(runtime: ClientRuntime, sid: str) -> str:
    message = runtime.sessions[sid].state.last_agent_message
    return message.text if message else ""


def test_the_table_has_every_v1_method() -> None:
    names = {(m.name, m.kind) for m in STABLE_METHODS}
    assert len(names) == 25
    assert ("session/prompt", "request") in names and ("session/update", "notification") in names


async def test_every_v1_method(tmp_path: Path) -> None:
    client = FullClient()
    async with spawn_agent(AGENT, client) as conn:
        init = await client.initialize()  # initialize
        assert init.agent_info.name == "full-agent"  # type: ignore[union-attr]
        assert [m.id for m in init.auth_methods] == ["token"]  # type: ignore[union-attr]

        # session/new answers -32000 first; the runtime authenticates and retries (authenticate).
        new = await client.new_session(str(tmp_path))
        sid = new.session_id
        assert new.modes.current_mode_id == "code"  # type: ignore[union-attr]
        assert [o.type for o in new.config_options] == ["select", "boolean"]  # type: ignore[union-attr]

        # session/update: every v1 variant, decoded as the right classes.
        await client.prompt(sid, "updates")
        state = client.sessions[sid].state
        assert [(m.speaker, m.text) for m in state.messages[-3:]] == [
            ("user", "user says"),
            ("thought", "thinking"),
            ("agent", "answer"),
        ]
        assert (
            state.tool_calls["tc"].status == "completed"
            and state.tool_calls["tc"].locations[0].line == 3
        )
        assert state.plan[0].content == "step" and state.available_commands[0].name == "go"
        assert state.current_mode_id == "ask" and state.config_options[1].current_value is True
        assert state.title == "Titled" and state.usage.cost == {"amount": 0.5, "currency": "EUR"}  # type: ignore[union-attr]

        # fs/write_text_file + fs/read_text_file (line/limit) on real files.
        target = tmp_path / "dir" / "f.txt"
        await client.prompt(sid, f"fs {target}")
        assert target.read_text() == "a\nb\nc\n" and last(client, sid) == "read='b\\n'"

        # terminal/create, output, kill, wait_for_exit, release (then the id is invalid).
        await client.prompt(sid, "terminal")
        assert last(client, sid) == "output=out signal=SIGTERM exit=SIGTERM released=-32002"

        # session/request_permission
        await client.prompt(sid, "permission")
        assert last(client, sid) == "yes"

        # elicitation/create + elicitation/complete
        await client.prompt(sid, "elicit")
        assert last(client, sid) == "accept:{'name': 'Ada'}"
        assert client.elicitations[0].mode == "form" and client.completed == ["e1"]

        # extension methods both ways
        assert await conn.agent.call("_test/ping", {"x": 1}) == {"pong": {"x": 1}}
        await client.prompt(sid, "ext")
        assert last(client, sid) == "ext={'client': 'pong'}"
        assert ("_test/client_note", {"n": 2}) in client.ext

        # session/set_mode and session/set_config_option
        await conn.agent.session_set_mode(acp.SetSessionModeRequest(session_id=sid, mode_id="ask"))
        with pytest.raises(RequestError) as info:
            await conn.agent.session_set_mode(
                acp.SetSessionModeRequest(session_id=sid, mode_id="nope")
            )
        assert info.value.code == -32602
        opts = await conn.agent.session_set_config_option(
            acp.SetSessionConfigOptionRequest(
                session_id=sid, config_id="verbose", type="boolean", value=True
            )
        )
        assert (
            opts.config_options[1].current_value is True
            and opts.config_options[0].current_value == "ask"
        )

        # session/cancel cancels a running turn; $/cancel_request too.
        turn = asyncio.create_task(client.prompt(sid, "wait"))
        await client.turn_waiting()
        await client.cancel(sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        turn = asyncio.create_task(client.prompt(sid, "wait"))
        await client.turn_waiting()
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert (await client.prompt(sid, "permission")).stop_reason == "end_turn"

        # session/list with pagination, session/load replays, session/resume, session/close, session/delete
        second = (await client.new_session(str(tmp_path))).session_id
        third = (await client.new_session(str(tmp_path))).session_id
        page = await conn.agent.session_list()
        assert [s.session_id for s in page.sessions] == [sid, second] and page.next_cursor == "2"
        page = await conn.agent.session_list(acp.ListSessionsRequest(cursor="2"))
        assert [s.session_id for s in page.sessions] == [third] and page.next_cursor is UNSET
        before = len(client.sessions[sid].state.messages)
        loaded = await client.load_session(sid, str(tmp_path))
        assert loaded.modes.current_mode_id == "ask"  # type: ignore[union-attr]
        assert (
            len(client.sessions[sid].state.messages) > before
        )  # the history was replayed before the answer
        await client.resume_session(second, str(tmp_path))
        await client.close_session(second)
        await conn.agent.session_delete(acp.DeleteSessionRequest(session_id=third))
        await conn.agent.session_delete(acp.DeleteSessionRequest(session_id=third))  # idempotent
        with pytest.raises(RequestError) as info:
            await client.load_session(third, str(tmp_path))
        assert info.value.code == -32002
        # A session the agent does not know is not tracked after the refusal.
        for reopen in (client.load_session, client.resume_session):
            with pytest.raises(RequestError):
                await reopen("no-such-session", str(tmp_path))
            assert "no-such-session" not in client.sessions

        # logout: new sessions need authentication again (the runtime does it again).
        await conn.agent.logout()
        assert (await client.new_session(str(tmp_path))).session_id


async def test_capability_gates(tmp_path: Path) -> None:
    # A client without fs/terminal: the agent's ClientPeer refuses to send those calls.
    bare = ClientRuntime(enable_fs=False, enable_terminal=False)
    bare.choose_auth_method = FullClient().choose_auth_method
    async with spawn_agent(AGENT, bare):
        await bare.initialize()
        sid = (await bare.new_session(str(tmp_path))).session_id
        await bare.prompt(sid, f"fs {tmp_path / 'x.txt'}")
        assert "capability error" in last(bare, sid) and "write_text_file" in last(bare, sid)
        await bare.prompt(sid, "terminal")
        assert "capability error" in last(bare, sid)
        await bare.prompt(sid, "elicit")
        assert "capability error" in last(bare, sid) and "elicitation.form" in last(bare, sid)
        assert not (tmp_path / "x.txt").exists()
    # An agent without loadSession: our AgentPeer refuses to send session/load.
    async with spawn_agent([*AGENT, "minimal"], Client()) as conn:
        await conn.agent.initialize()
        with pytest.raises(CapabilityError, match="load_session|loadSession"):
            await conn.agent.session_load(
                acp.LoadSessionRequest(session_id="only", cwd="/", mcp_servers=[])
            )
        # Unimplemented optional handlers answer -32601 (sent anyway, bypassing our own gate).
        with pytest.raises(RequestError) as info:
            await conn.connection.request(
                "session/list", acp.ListSessionsRequest(), check_gate=False
            )
        assert info.value.code == -32601
        with pytest.raises(RequestError) as info:
            await conn.connection.request(
                "session/prompt", acp.PromptRequest(session_id="only", prompt=[]), check_gate=False
            )
        assert info.value.code == -32601
