"""The neutral events and the v1 and v2 codecs (sans-IO): every kind round-trips through
each version that has it, what each encoder writes is valid wire for its version (read
back by the generated schema types), what a version cannot say is mapped as documented,
and bad input gives an `UnknownEvent` or a clear exception."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acpstack import events as ev
from acpstack.events import UPDATE_KINDS
from acpstack.schema import UnknownSessionUpdate, convert, v1, v1_unstable, v2, v2_unstable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _samples import SAMPLES, TEXT, V1_DIFF, V1_SAMPLES, V2_DIFF  # noqa: E402

TRACE = Path(__file__).parents[1] / "client" / "data" / "session_updates.jsonl"
TRACE_V2 = Path(__file__).parent / "data" / "trace_v2.jsonl"


def _in_v1(event: ev.Event) -> bool:
    return UPDATE_KINDS[ev.kind_of(event)].v1 is not None


def _in_v2(event: ev.Event) -> bool:
    return UPDATE_KINDS[ev.kind_of(event)].v2 is not None


def _wire(data: bytes, union: Any) -> Any:
    """`data` read by the generated types of a version: a typed variant, not kept unknown."""
    update = convert(msgspec.json.decode(data), union)
    assert not isinstance(update, UnknownSessionUpdate), data
    return update


def test_every_kind_of_the_table_is_an_event_type_with_a_sample() -> None:
    assert set(ev.EVENT_TYPES) == set(UPDATE_KINDS)
    assert {ev.kind_of(e) for e in SAMPLES} == set(UPDATE_KINDS)


@pytest.mark.parametrize("event", SAMPLES + V1_SAMPLES, ids=ev.kind_of)
def test_the_neutral_json_round_trips(event: ev.KnownEvent) -> None:
    assert ev.decode_event(ev.encode_event(event)) == event
    assert ev.event_from_json(ev.event_json(event)) == event


# (the tool call update sample has a v2 diff, which v1 says as text: see below)
V1_ROUND = [e for e in SAMPLES if _in_v1(e) and not isinstance(e, ev.ToolCallUpdate)] + V1_SAMPLES


@pytest.mark.parametrize("event", V1_ROUND, ids=ev.kind_of)
def test_event_to_v1_to_event(event: ev.KnownEvent) -> None:
    data = ev.v1.encode(event, unstable=True)
    assert data is not None
    wire = _wire(data, v1_unstable.SessionUpdate)
    assert ev.v1.decode(data) == event
    assert ev.v1.decode(wire) == event  # from the schema's own struct too
    # A v1 update's JSON is the event's JSON: no conversion either way.
    assert json.loads(data) == ev.event_json(event)


@pytest.mark.parametrize("event", [e for e in SAMPLES if _in_v2(e)], ids=ev.kind_of)
def test_event_to_v2_to_event(event: ev.KnownEvent) -> None:
    data = ev.v2.encode(event, ev.MessageIds("m"))
    assert data is not None
    wire = _wire(data, v2_unstable.SessionUpdate)
    assert ev.v2.decode(data) == event
    assert ev.v2.decode(wire) == event


def test_message_chunks_have_the_same_json_in_v1_v2_and_the_store() -> None:
    chunk = ev.AgentMessageChunk(content=TEXT, message_id="m1")
    stored = ev.encode_event(chunk)
    assert ev.v1.encode(chunk) == stored
    assert ev.v2.encode(chunk, ev.MessageIds("x")) == stored


def test_a_stable_v1_connection_gets_no_unstable_kind() -> None:
    for event in SAMPLES:
        kind = UPDATE_KINDS[ev.kind_of(event)]
        data = ev.v1.encode(event)
        assert (data is not None) == (kind.v1 == "stable"), kind.tag
        if data is not None:
            _wire(data, v1.SessionUpdate)


def test_v2_only_kinds_have_no_v1_update_and_v1_only_ones_no_v2_update() -> None:
    for event in SAMPLES:
        assert (ev.v1.encode(event, unstable=True) is None) == (not _in_v1(event))
    for event in (ev.CurrentModeUpdate(current_mode_id="code"),):
        assert ev.v2.encode(event, ev.MessageIds("m")) is None


# -- what v1 cannot say ----------------------------------------------------------------


def test_a_cancelled_call_is_failed_with_the_mark_in_v1_and_cancelled_again_in_v2() -> None:
    event = ev.ToolCallUpdate(tool_call_id="c", status="cancelled", meta={"mine": 1})
    data = ev.v1.encode(event)
    assert data is not None
    wire = _wire(data, v1.SessionUpdate)
    assert wire.status == "failed"
    assert wire.meta == {"mine": 1, "acpstack/status": "cancelled"}
    stored = ev.v1.decode(data)  # a v1 history keeps the mark ...
    out = json.loads(ev.v2.encode(stored, ev.MessageIds("m")) or b"")
    assert out == {  # ... and v2 says `cancelled` again, without it
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "cancelled",
        "_meta": {"mine": 1},
    }


def test_capabilities_are_left_out_in_v1_and_kept_in_v2() -> None:
    event = ev.ToolCallUpdate(tool_call_id="c", capabilities={"cancel": {}})
    assert json.loads(ev.v1.encode(event) or b"") == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
    }
    data = ev.v2.encode(event, ev.MessageIds("m"))
    assert data is not None
    assert isinstance(_wire(data, v2.SessionUpdate).capabilities, v2.ToolCallCapabilities)
    assert ev.v2.decode(data) == event


def test_a_v2_diff_is_its_patch_as_text_in_v1() -> None:
    event = ev.ToolCallUpdate(tool_call_id="c", content=[V2_DIFF])
    wire = _wire(ev.v1.encode(event) or b"", v1.SessionUpdate)
    assert wire.content == [
        v1.Content(content=v1.TextContent(text="```diff\ndiff --git /w/a.py /w/a.py\n```"))
    ]


def test_a_diff_with_both_shapes_is_v1s_in_v1_and_v2s_in_v2() -> None:
    both = ev.Diff(path="/w/a.py", old_text="a\n", new_text="b\n", changes=V2_DIFF.changes,
                   patch=V2_DIFF.patch)  # fmt: skip
    event = ev.ToolCallUpdate(tool_call_id="c", content=[both])
    in_v1 = json.loads(ev.v1.encode(event) or b"")["content"][0]
    assert in_v1 == {"type": "diff", "path": "/w/a.py", "oldText": "a\n", "newText": "b\n"}
    in_v2 = json.loads(ev.v2.encode(event, ev.MessageIds("m")) or b"")["content"][0]
    assert in_v2 == {"type": "diff", "changes": V2_DIFF.changes, "patch": V2_DIFF.patch}


# -- a v1 history on a v2 connection -------------------------------------------------


def test_a_v1_history_in_v2() -> None:
    ids = ev.MessageIds("r")
    chunks = [ev.AgentMessageChunk(content=TEXT), ev.AgentMessageChunk(content=TEXT),
              ev.AgentThoughtChunk(content=TEXT), ev.AgentMessageChunk(content=TEXT)]  # fmt: skip
    out = [json.loads(ev.v2.encode(c, ids) or b"")["messageId"] for c in chunks]
    assert out == ["r1", "r1", "r2", "r3"]  # a run of one speaker is one message

    terminal = v1.Terminal(terminal_id="t")
    call = ev.ToolCall(tool_call_id="c", title="Edit", content=[V1_DIFF, terminal])
    data = ev.v2.encode(call, ids, client_terminals=True)
    wire = _wire(data or b"", v2.SessionUpdate)
    assert isinstance(wire, v2.SessionUpdateToolCallUpdate)  # v2 creates calls by an update
    [diff] = wire.content  # the client terminal is left out
    assert diff.changes[0].operation == "modify"
    assert diff.patch.text.startswith("diff --git /w/a.py /w/a.py\n--- /w/a.py\n+++ /w/a.py\n")

    plan = ev.Plan(entries=[ev.PlanEntry(content="x", priority="high", status="pending")])
    wire = _wire(ev.v2.encode(plan, ids) or b"", v2.SessionUpdate)
    assert isinstance(wire, v2.PlanUpdate)
    assert wire.plan.plan_id == ev.v2.PLAN_ID


def test_the_recorded_v1_trace_decodes_and_matches_the_old_v2_conversion() -> None:
    # `data/trace_v2.jsonl`: what the old v1-to-v2 conversion of the agent
    # (`agent/_v2_convert.py`, removed since) made of each update of the trace, recorded
    # with it before it went.
    expected = [json.loads(line) for line in TRACE_V2.read_text().splitlines()]
    ids = ev.MessageIds("m")
    lines = TRACE.read_text().splitlines()
    assert len(lines) > 10 and len(lines) == len(expected)
    for line, old in zip(lines, expected, strict=True):
        update = json.loads(line)["update"]
        event = ev.v1.decode(msgspec.json.encode(update))
        known = update["sessionUpdate"] in UPDATE_KINDS  # (the trace has a custom kind)
        assert isinstance(event, ev.UnknownEvent) != known, update
        assert json.loads(ev.v1.encode(event, unstable=True) or b"") == update
        # One change on purpose: a kind of no version (custom) goes to v2 peers too, as
        # it came (the old conversion dropped it); a v2 client ignores what it does not
        # know. The recording holds it as it came.
        new = ev.v2.encode(event, ids, client_terminals=True)
        assert ([] if new is None else [json.loads(new)]) == old, update


# -- bad input and unknown kinds -------------------------------------------------------


def test_an_unknown_kind_is_kept_whole_and_sent_as_it_came() -> None:
    data = b'{"sessionUpdate":"hologram","x":[1,2]}'
    for decode in (ev.decode_event, ev.v1.decode, ev.v2.decode):
        event = decode(data)
        assert event == ev.UnknownEvent({"sessionUpdate": "hologram", "x": [1, 2]})
    event = ev.v1.decode(data)
    assert event.session_update == "hologram"  # type: ignore[union-attr]
    assert ev.v1.encode(event) == data.replace(b" ", b"")
    assert ev.v2.encode(event, ev.MessageIds("m")) == data


def test_a_known_kind_it_cannot_read_is_kept_whole() -> None:
    bad = {"sessionUpdate": "agent_message_chunk", "content": 5}
    assert ev.v1.decode(msgspec.json.encode(bad)) == ev.UnknownEvent(bad)
    assert ev.v2.decode(bad) == ev.UnknownEvent(bad)
    unknown_block = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                     "content": {"type": "hologram"}}  # fmt: skip
    assert ev.v2.decode(msgspec.json.encode(unknown_block)) == ev.UnknownEvent(unknown_block)


@pytest.mark.parametrize("data", [b"", b"{", b"not json"])
def test_json_that_does_not_parse_raises(data: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        ev.decode_event(data)


@pytest.mark.parametrize("data", [b"[]", b"5", b'"agent_message_chunk"', b"null"])
def test_json_that_is_not_an_object_raises(data: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        ev.decode_event(data)


def test_a_schema_struct_decodes_as_the_event_of_its_json() -> None:
    chunk = v1.AgentMessageChunk(content=v1.TextContent(text="hi"), message_id="m")
    assert ev.v1.decode(chunk) == ev.AgentMessageChunk(content=TEXT.__class__(text="hi"),
                                                       message_id="m")  # fmt: skip
    kept = UnknownSessionUpdate.of({"sessionUpdate": "x", "y": 1})
    assert ev.v1.decode(kept) == ev.UnknownEvent({"sessionUpdate": "x", "y": 1})
    state = v2.IdleStateUpdate(stop_reason="end_turn")
    assert ev.v2.decode(state) == ev.StateUpdate(state="idle", stop_reason="end_turn")


# -- the expectations of the old conversions, through the codecs -----------------------


@pytest.mark.parametrize("event", [e for e in V1_ROUND if UPDATE_KINDS[ev.kind_of(e)].v1 == "stable"],
                         ids=ev.kind_of)  # fmt: skip
def test_a_stable_v1_struct_decodes_too(event: ev.KnownEvent) -> None:
    wire = _wire(ev.v1.encode(event) or b"", v1.SessionUpdate)
    assert type(wire).__module__ == "acpstack.schema._generated_v1"
    assert ev.v1.decode(wire) == event


@pytest.mark.parametrize("event", [e for e in SAMPLES if UPDATE_KINDS[ev.kind_of(e)].v2 == "stable"],
                         ids=ev.kind_of)  # fmt: skip
def test_a_stable_v2_struct_decodes_too(event: ev.KnownEvent) -> None:
    wire = _wire(ev.v2.encode(event, ev.MessageIds("m")) or b"", v2.SessionUpdate)
    assert type(wire).__module__ == "acpstack.schema._generated_v2"
    assert ev.v2.decode(wire) == event


def test_the_agents_cancelled_mark_is_the_one_the_codecs_read() -> None:
    from acpstack.agent._cancel import mark_cancelled

    update = v1.SessionUpdateToolCallUpdate(tool_call_id="t1", status="failed", meta={"v": 1})
    mark_cancelled(update)
    stored = ev.v1.decode(msgspec.json.encode(update))
    out = json.loads(ev.v2.encode(stored, ev.MessageIds("m")) or b"")
    assert out == {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                   "status": "cancelled", "_meta": {"v": 1}}  # fmt: skip
    only_mark = ev.ToolCallUpdate(tool_call_id="t1", status="failed",
                                  meta={ev.v1.CANCELLED_META: "cancelled"})  # fmt: skip
    assert "_meta" not in json.loads(ev.v2.encode(only_mark, ev.MessageIds("m")) or b"")
    other = ev.ToolCallUpdate(tool_call_id="t1", status="failed",
                              meta={ev.v1.CANCELLED_META: "other"})  # fmt: skip
    assert json.loads(ev.v2.encode(other, ev.MessageIds("m")) or b"")["status"] == "failed"


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (v2.TextContent(text="hi"), v1.TextContent(text="hi")),
        (
            v2.TextContent(text="hi", annotations=v2.Annotations(priority=0.5)),
            v1.TextContent(text="hi", annotations=v1.Annotations(priority=0.5)),
        ),
        (v2.TextContent(text="hi", meta={"k": 1}), v1.TextContent(text="hi", meta={"k": 1})),
        (
            v2.ImageContent(data="aGk=", mime_type="image/png"),
            v1.ImageContent(data="aGk=", mime_type="image/png"),
        ),
    ],
)
def test_a_v2_block_is_the_same_block_in_the_event(block: Any, expected: Any) -> None:
    chunk = v2.AgentMessageChunk(content=block, message_id="m")
    for given in (chunk, msgspec.json.encode(chunk)):
        event = ev.v2.decode(given)
        assert isinstance(event, ev.AgentMessageChunk)
        assert type(event.content) is type(expected)
        assert event.content == expected


def test_v2s_open_values_get_v1s_fallbacks_in_v1() -> None:
    call = ev.ToolCallUpdate(tool_call_id="c", kind="browse", status="paused")
    wire = _wire(ev.v1.encode(call) or b"", v1.SessionUpdate)
    assert (wire.kind, wire.status) == ("other", "in_progress")
    plan = ev.Plan(entries=[ev.PlanEntry(content="x", priority="urgent", status="cancelled")])
    wire = _wire(ev.v1.encode(plan) or b"", v1.SessionUpdate)
    assert [(e.priority, e.status) for e in wire.entries] == [("medium", "pending")]
    assert ev.v2.decode(ev.v2.encode(call, ev.MessageIds("m")) or b"") == call  # kept in v2
