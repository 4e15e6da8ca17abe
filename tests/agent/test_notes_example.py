"""examples/notes_agent.py, the 40-line SessionAgent example, driven for real by our client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import acpstack.events as events
from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes_agent.py"


def test_the_example_is_at_most_40_lines() -> None:
    assert len(EXAMPLE.read_text().splitlines()) <= 40


def runtime(answer: str, log: list[acp.SessionUpdate]) -> ClientRuntime:
    async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        return next(o for o in request.options if o.kind == answer)

    return ClientRuntime(ask=ask, on_update=lambda sid, update: log.append(update))


async def test_plan_permission_diff_terminal_and_the_session_lifecycle(tmp_path: Path) -> None:
    db, notes = tmp_path / "notes.db", tmp_path / "NOTES.md"
    env = {"NOTES_AGENT_DB": str(db)}
    log: list[acp.SessionUpdate] = []
    client = runtime("allow_once", log)
    async with spawn_agent([sys.executable, str(EXAMPLE)], client, env=env):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        assert (await client.prompt(sid, "buy milk")).stop_reason == "end_turn"
        assert (await client.prompt(sid, "call Ada")).stop_reason == "end_turn"
        assert notes.read_text() == "- buy milk\n- call Ada\n"
        state = client.sessions[sid].state
        assert [e.status for e in state.plan] == ["completed"] * 3
        diffs = [
            c
            for u in log
            if isinstance(u, events.ToolCall)
            for c in (u.content or [])
            if isinstance(c, events.Diff)
        ]
        assert (
            diffs[-1].old_text == "- buy milk\n"
            and diffs[-1].new_text == "- buy milk\n- call Ada\n"
        )
        terminals = [
            c
            for u in log
            if isinstance(u, events.ToolCallUpdate)
            for c in (u.content or [])
            if isinstance(c, acp.Terminal)
        ]
        assert len(terminals) == 2
        assert state.last_agent_message is not None and "2 lines" in state.last_agent_message.text
        sent = len(log)

    # A new process on the same store: list, load (replays everything), resume, close, delete.
    log2: list[acp.SessionUpdate] = []
    again = runtime("reject_once", log2)
    async with spawn_agent([sys.executable, str(EXAMPLE)], again, env=env) as conn:
        await again.initialize()
        listed = await conn.agent.session_list(acp.ListSessionsRequest(cwd=str(tmp_path)))
        assert [s.session_id for s in listed.sessions] == [sid]
        await again.load_session(sid, str(tmp_path))
        assert len([u for u in log2 if not isinstance(u, events.UserMessageChunk)]) == sent
        await again.resume_session(sid, str(tmp_path))
        assert (await again.prompt(sid, "rejected note")).stop_reason == "end_turn"
        assert notes.read_text() == "- buy milk\n- call Ada\n"  # the user said no
        assert "left NOTES.md" in again.sessions[sid].state.last_agent_message.text  # type: ignore[union-attr]
        await again.close_session(sid)
        await conn.agent.session_delete(acp.DeleteSessionRequest(session_id=sid))
        with pytest.raises(RequestError) as info:
            await again.load_session(sid, str(tmp_path))
        assert info.value.code == -32002
