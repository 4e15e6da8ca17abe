"""SessionState applied to a replayed, realistic session/update stream (decoded by the real wire layer)."""

from __future__ import annotations

from pathlib import Path

import acpstack.events as ev
from acpstack.client import SessionState
from acpstack.schema import v1 as acp
from acpstack.wire import IncomingNotification, IncomingRequest, IncomingResponse, ProtocolState

DATA = Path(__file__).parent / "data" / "session_updates.jsonl"


def replay() -> SessionState:
    wire = ProtocolState("client")
    rid, _, _ = wire.start_request("initialize", acp.InitializeRequest(protocol_version=1))
    wire.receive(b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":1}}\n' % rid)
    state = SessionState("sess-1")
    for line in DATA.read_bytes().splitlines():
        events = wire.receive(
            b'{"jsonrpc":"2.0","method":"session/update","params":' + line + b"}\n"
        )
        assert len(events) == 1, line
        event = events[0]
        assert isinstance(event, IncomingNotification) and not isinstance(
            event, IncomingRequest | IncomingResponse
        )
        state.apply(event.params.update)
    return state


def test_messages_joined_by_message_id() -> None:
    state = replay()
    speakers = [(m.speaker, m.message_id) for m in state.messages]
    assert speakers == [("user", "u1"), ("thought", "t1"), ("agent", "a1"), ("agent", "a2")]
    assert state.messages[1].text == "The test imports a renamed function."
    assert state.messages[2].text == "I renamed the import to `create_app`."
    assert isinstance(state.messages[0].content[1], acp.ResourceLink)
    last = state.last_agent_message
    assert last is not None and last.text == "Anything else?"


def test_tool_calls_merged_by_id() -> None:
    state = replay()
    read = state.tool_calls["call_1"]
    assert (read.kind, read.status, read.title) == ("read", "completed", "Read tests/test_app.py")
    assert read.raw_input == {"path": "/w/tests/test_app.py"} and read.raw_output == {"lines": 12}
    assert [loc.path for loc in read.locations] == [
        "/w/tests/test_app.py"
    ]  # kept: the updates did not carry locations
    assert isinstance(read.content[0], acp.Content)
    edit = state.tool_calls["call_2"]
    assert edit.title == "Edit tests/test_app.py (1 line)" and edit.status == "completed"
    assert (
        isinstance(edit.content[0], ev.Diff)
        and edit.content[0].new_text == "from app import create_app"
    )
    assert edit.locations[0].line == 1  # replaced whole by the update
    orphan = state.tool_calls["call_9"]  # an update for an unknown id creates the call
    assert orphan.status == "failed" and orphan.content == []


def test_replaced_wholesale_and_three_state_fields() -> None:
    state = replay()
    assert [(e.content, e.status) for e in state.plan] == [
        ("Read the test", "completed"),
        ("Fix the import", "in_progress"),
    ]
    assert [c.name for c in state.available_commands] == ["init", "review"]
    assert state.current_mode_id == "code"
    assert state.title is None  # set, then cleared with an explicit null
    assert state.updated_at == "2026-11-22T10:00:00Z"  # the clearing update omitted it: unchanged
    assert state.usage is not None and state.usage.used == 5231


def test_unknown_updates_are_kept() -> None:
    state = replay()
    assert state.unknown_updates == [{"sessionUpdate": "_vendor_progress", "percent": 40}]
