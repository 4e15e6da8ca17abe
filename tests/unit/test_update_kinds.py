"""The table of `session/update` kinds against the generated schema: every variant of every
protocol version has its entry (so a kind new in the schema cannot be dropped silently), and
each consumer of the client's events (the state, the chat's renderer, its child sessions)
dispatches through it."""

from __future__ import annotations

import io
import typing
from typing import Any

import pytest

import acpstack.events as events
from acpstack.cli._chat_children import ChildSessions, RecordSink
from acpstack.cli._render import Renderer
from acpstack.cli._view_plain import PlainView
from acpstack.client import (
    UPDATE_KINDS,
    ClientRuntime,
    SessionState,
    UpdateDispatch,
    update_kind,
)
from acpstack.schema import UnknownSessionUpdate, v1, v1_unstable, v2, v2_unstable


def v1_variants(module: Any) -> list[type]:
    return list(typing.get_args(module.SessionUpdate))


def v2_tags(module: Any) -> set[str]:
    # v2's unions are resolved at runtime from the tag: the union's spec lists every variant.
    tag_field, variants, _, _ = module._CUSTOM_UNIONS["SessionUpdate"]
    assert tag_field == "sessionUpdate"
    return set(variants)


def stability(stable: set[str], unstable: set[str], tag: str) -> str | None:
    assert stable <= unstable  # the unstable schema is a superset
    return "stable" if tag in stable else "unstable" if tag in unstable else None


def test_every_update_variant_of_the_schema_has_its_entry() -> None:
    v1_stable = {cls.__struct_config__.tag for cls in v1_variants(v1)}
    v1_all = {cls.__struct_config__.tag for cls in v1_variants(v1_unstable)}
    v2_stable, v2_all = v2_tags(v2), v2_tags(v2_unstable)
    schema = {
        tag: (stability(v1_stable, v1_all, tag), stability(v2_stable, v2_all, tag))
        for tag in v1_all | v2_all
    }
    table = {tag: (kind.v1, kind.v2) for tag, kind in UPDATE_KINDS.items()}
    assert table == schema
    assert all(kind.tag == tag for tag, kind in UPDATE_KINDS.items())
    assert events.ALL_KINDS == v1_all | v2_all == set(events.EVENT_TYPES)


def test_the_speaker_of_each_message_kind() -> None:
    speakers = {tag: kind.speaker for tag, kind in UPDATE_KINDS.items() if kind.speaker}
    assert speakers == {
        "user_message_chunk": "user",
        "agent_message_chunk": "agent",
        "agent_thought_chunk": "thought",
        "user_message": "user",
        "agent_message": "agent",
        "agent_thought": "thought",
    }


def test_each_event_type_has_its_kind() -> None:
    for tag, cls in events.EVENT_TYPES.items():
        assert events.event_kind(cls) == tag
    assert update_kind(events.Plan(entries=[])) == "plan"
    assert update_kind(events.UnknownEvent({"sessionUpdate": "future"})) is None
    assert update_kind({"sessionUpdate": "plan"}) is None  # a plain object has no kind


def test_a_schema_struct_has_no_kind_of_its_own() -> None:
    # v1's and v2's structs become events at the wire edge (or in `SessionState.apply`).
    assert update_kind(v2.Notice(severity="info", title="t")) is None
    assert update_kind(v1.Notice(severity="info", title="t")) is None
    assert update_kind(events.Notice(severity="info", title="t")) == "notice"


def test_a_consumer_must_handle_every_kind() -> None:
    handlers = dict.fromkeys(events.ALL_KINDS, "handled")
    assert UpdateDispatch(handlers, unknown="unknown").handler(events.Plan(entries=[])) == "handled"
    del handlers["state_update"]
    with pytest.raises(ValueError, match="'state_update'"):
        UpdateDispatch(handlers, unknown="unknown")
    with pytest.raises(ValueError, match="'made_up'"):
        UpdateDispatch({**dict.fromkeys(events.ALL_KINDS, 0), "made_up": 0}, unknown=0)


def test_anything_of_no_kind_goes_to_unknown() -> None:
    dispatch = UpdateDispatch({tag: tag for tag in events.ALL_KINDS}, unknown="unknown")
    chunk = events.AgentMessageChunk(content=v1.TextContent(text="a"))
    assert dispatch.handler(chunk) == "agent_message_chunk"
    assert dispatch.handler(events.UnknownEvent({"sessionUpdate": "x"})) == "unknown"
    assert dispatch.handler(v1.AgentMessageChunk(content=v1.TextContent(text="a"))) == "unknown"


def test_the_state_reads_a_v1_struct_as_its_event() -> None:
    state = SessionState("s")
    state.apply(v1.AgentMessageChunk(content=v1.TextContent(text="hi")))
    state.apply(v1_unstable.PlanRemoved(plan_id="p1"))
    assert [m.text for m in state.messages] == ["hi"]
    assert state.unknown_updates == []


def test_unknown_kinds_are_kept_whole_and_said() -> None:
    state = SessionState("s")
    custom = events.UnknownEvent({"sessionUpdate": "_x/thing", "n": 1})
    legacy = UnknownSessionUpdate.of({"sessionUpdate": "_x/other"})
    for update in (custom, legacy):
        state.apply(update)
    assert [u["sessionUpdate"] for u in state.unknown_updates] == ["_x/thing", "_x/other"]
    out = io.StringIO()
    renderer = Renderer(PlainView(out), ClientRuntime(), rich=False)
    renderer.on_update("s", custom)
    assert out.getvalue().count("not understood by this client") == 1
    assert "'_x/thing'" in out.getvalue()


def test_child_sessions_take_only_their_kinds() -> None:
    records: list[dict[str, Any]] = []
    state = SessionState("s")
    children = ChildSessions(lambda _: state, RecordSink(records.append))
    child = events.SubagentUpdate(session_id="c1", title="helper")
    state.apply(child)
    assert children.on_update("s", child) is True
    assert children.on_update("s", events.Plan(entries=[])) is False
    assert [r["type"] for r in records] == ["subagent"]
