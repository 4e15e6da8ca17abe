"""Protocol version 1 at the wire edge: a v1 update as an event, an event as v1 JSON.

A v1 update's JSON is an event's JSON (see `_types.py`), so reading is a direct decode.
Writing is a direct encode except where the event says what v1 cannot:

- tool status `cancelled` is `failed` with `_meta["acpstack/status"]: "cancelled"` (the
  mark v2's encoder reads back), and a tool call's `capabilities` are left out;
- a diff of v2's shape only (`changes`/`patch`, no `newText`) is a text block with its
  patch, as v1's diff needs the old and new text;
- an enum value v1's closed `Literal` lacks (v2's are open) gets v1's fallback: a tool
  call's kind `other`, its status `in_progress` (v2: an unknown status is still in
  progress; `paused` too), a plan entry's priority `medium` and status `pending`;
- the v2-only kinds (state, agent terminals, whole messages, tool-content chunks) have no
  v1 update (None), nor have the unstable kinds on a stable connection.
"""

from __future__ import annotations

from typing import Any, get_args

import msgspec
from msgspec import UNSET

from acpstack.events import _types as ev
from acpstack.events._kinds import UPDATE_KINDS
from acpstack.schema import UnknownSessionUpdate, v1

CANCELLED_META = "acpstack/status"  # {CANCELLED_META: "cancelled"} on a v1 `failed` call

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(ev.KnownEvent).decode
# The kinds whose event is its v1 update as it is: message chunks (the hot path).
_SAME = frozenset({ev.AgentMessageChunk, ev.UserMessageChunk, ev.AgentThoughtChunk})
_TOOL_KINDS = frozenset(get_args(v1.ToolKind))
_TOOL_STATUSES = frozenset(get_args(v1.ToolCallStatus))
_PRIORITIES = frozenset(get_args(v1.PlanEntryPriority))
_PLAN_STATUSES = frozenset(get_args(v1.PlanEntryStatus))


def decode(data: bytes | str | dict[str, Any] | msgspec.Struct) -> ev.Event:
    """The event of a v1 update: its JSON (bytes or parsed) or a struct of
    `acpstack.schema.v1`/`v1_unstable` (an `UnknownSessionUpdate` is an `UnknownEvent`)."""
    if type(data) is bytes:
        try:
            event: ev.Event = _decode(data)  # the hot path: one msgspec pass
        except msgspec.ValidationError:
            return ev.decode_event(data)  # (kept whole, or the clear exception)
        return event
    if isinstance(data, str):
        return ev.decode_event(data)
    if isinstance(data, dict):
        return ev.event_from_json(data)
    if isinstance(data, UnknownSessionUpdate):
        return ev.UnknownEvent(data.data)
    return ev.event_from_json(msgspec.to_builtins(data))


def encode(event: ev.Event, *, unstable: bool = False) -> bytes | None:
    """`event` as the JSON of a v1 `session/update` (the `update` member), None when v1
    (or stable v1, unless `unstable`) has no such update."""
    if type(event) in _SAME:
        return _encode(event)  # the hot path: the same JSON
    if isinstance(event, ev.UnknownEvent):
        return _encode(event.data)
    kind = UPDATE_KINDS[ev.kind_of(event)]
    if kind.v1 is None or (kind.v1 == "unstable" and not unstable):
        return None
    if isinstance(event, ev.ToolCall | ev.ToolCallUpdate):
        return _encode(_tool_call(event))
    if isinstance(event, ev.Plan):
        return _encode(_plan(event))
    return _encode(event)


def _plan(plan: ev.Plan) -> ev.Plan:
    if all(e.priority in _PRIORITIES and e.status in _PLAN_STATUSES for e in plan.entries):
        return plan
    entries = [
        msgspec.structs.replace(
            e,
            priority=e.priority if e.priority in _PRIORITIES else "medium",
            status=e.status if e.status in _PLAN_STATUSES else "pending",
        )
        for e in plan.entries
    ]
    return msgspec.structs.replace(plan, entries=entries)


def _tool_call(event: ev.ToolCall | ev.ToolCallUpdate) -> ev.ToolCall | ev.ToolCallUpdate:
    changes: dict[str, Any] = {}
    if event.capabilities is not UNSET:
        changes["capabilities"] = UNSET
    if event.status == "cancelled":
        meta = event.meta if isinstance(event.meta, dict) else {}
        changes["status"] = "failed"
        changes["meta"] = {**meta, CANCELLED_META: "cancelled"}
    elif isinstance(event.status, str) and event.status not in _TOOL_STATUSES:
        changes["status"] = "in_progress"
    if isinstance(event.kind, str) and event.kind not in _TOOL_KINDS:
        changes["kind"] = "other"
    if isinstance(event.content, list) and any(type(c) is ev.Diff for c in event.content):
        changes["content"] = [_diff(c) if type(c) is ev.Diff else c for c in event.content]
    return msgspec.structs.replace(event, **changes) if changes else event


def _diff(diff: ev.Diff) -> Any:
    """v1's diff (without v2's fields), or a text block with the patch when the diff has
    no old and new text."""
    if diff.new_text is not UNSET and diff.path is not UNSET:
        return msgspec.structs.replace(diff, changes=UNSET, patch=UNSET)
    patch = diff.patch if isinstance(diff.patch, dict) else None
    if patch is not None and isinstance(patch.get("text"), str):
        text = f"```diff\n{patch['text'].rstrip()}\n```"
    else:
        changes = diff.changes if isinstance(diff.changes, list) else []
        text = "\n".join(f"{c.get('operation', '?')} {c.get('path', '?')}" for c in changes)
    return v1.Content(content=v1.TextContent(text=text))


__all__ = ["CANCELLED_META", "decode", "encode"]
