"""The table of `session/update` kinds against the generated schema: every variant of every
protocol version has its entry (so a kind new in the schema cannot be dropped silently), and
each consumer of the client's model dispatches through it."""

from __future__ import annotations

import io
import typing
from typing import Any

import pytest

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
from acpstack.client._update_kinds import MODEL_KINDS, model_kind
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
    assert MODEL_KINDS == v1_all


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


@pytest.mark.parametrize("module", [v1, v1_unstable], ids=["v1", "v1_unstable"])
def test_each_model_type_has_its_kind(module: Any) -> None:
    for cls in v1_variants(module):
        assert model_kind(cls) == cls.__struct_config__.tag, cls
    assert update_kind(UnknownSessionUpdate(session_update="future", data={})) is None
    assert update_kind({"sessionUpdate": "plan"}) is None  # a plain object has no kind


def test_another_versions_type_has_no_model_kind() -> None:
    # A v2 struct reaches the model only through `_v2_view.py`: here it is unknown.
    notice = v2.Notice(severity="info", title="t")
    assert update_kind(notice) is None
    assert update_kind(v1.Notice(severity="info", title="t")) == "notice"


def test_a_consumer_must_handle_every_model_kind() -> None:
    handlers = dict.fromkeys(MODEL_KINDS, "handled")
    assert UpdateDispatch(handlers, unknown="unknown").handler(v1.Plan(entries=[])) == "handled"
    del handlers["plan"]
    with pytest.raises(ValueError, match="'plan'"):
        UpdateDispatch(handlers, unknown="unknown")
    with pytest.raises(ValueError, match="'state_update'"):  # v2 only: not the model's
        UpdateDispatch({**dict.fromkeys(MODEL_KINDS, 0), "state_update": 0}, unknown=0)


def test_an_unstable_subclass_dispatches_as_its_stable_kind() -> None:
    dispatch = UpdateDispatch({tag: tag for tag in MODEL_KINDS}, unknown="unknown")
    stable = v1.AgentMessageChunk(content=v1.TextContent(text="a"))
    unstable = v1_unstable.AgentMessageChunk(content=v1_unstable.TextContent(text="a"))
    assert dispatch.handler(stable) == dispatch.handler(unstable) == "agent_message_chunk"
    assert dispatch.handler(UnknownSessionUpdate(session_update="x", data={})) == "unknown"


def test_kinds_the_model_does_not_hold_are_kept_whole() -> None:
    # The unstable plan_update / plan_removed and a custom kind: kept, said, not dropped.
    state = SessionState("s")
    plan = v1_unstable.PlanUpdate(plan=v1_unstable.PlanMarkdown(plan_id="p1", content="# do it"))
    removed = v1_unstable.PlanRemoved(plan_id="p1")
    custom = UnknownSessionUpdate.of({"sessionUpdate": "_x/thing", "n": 1})
    for update in (plan, removed, custom):
        state.apply(update)
    assert [u["sessionUpdate"] for u in state.unknown_updates] == [
        "plan_update",
        "plan_removed",
        "_x/thing",
    ]
    out = io.StringIO()
    renderer = Renderer(PlainView(out), ClientRuntime(), rich=False)
    for update in (plan, removed, custom):
        renderer.on_update("s", update)
    assert out.getvalue().count("not understood by this client") == 3


def test_child_sessions_take_only_their_kinds() -> None:
    records: list[dict[str, Any]] = []
    state = SessionState("s")
    children = ChildSessions(lambda _: state, RecordSink(records.append))
    child = v1_unstable.SubagentUpdate(session_id="c1", title="helper")
    state.apply(child)
    assert children.on_update("s", child) is True
    assert children.on_update("s", v1.Plan(entries=[])) is False
    assert [r["type"] for r in records] == ["subagent"]
