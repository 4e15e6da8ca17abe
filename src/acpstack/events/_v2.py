"""Protocol version 2 at the wire edge: a v2 update as an event, an event as v2 JSON.

Reading: a v2 update's JSON decodes straight into the events, as v2 spells most kinds as
v1 does; commands and config options are renamed to v1's spelling (`configId` is `id`,
`groupId` is `group`, a command's `{type: "text", hint}` input is `{hint}`).

Writing (what a `SessionAgent` session on a v2 connection sends):

- message chunks keep (or get, from `MessageIds`) the `messageId` v2 requires;
- `tool_call` is the call's first `tool_call_update`; v1's `failed` with the cancelled
  mark (`_v1.CANCELLED_META`) is `cancelled`; a v1 diff gets `{changes, patch}` (a git
  patch made from its texts); the terminal items of a history whose terminals are the
  client's (v1's, `client_terminals=True`) are left out, as v2 has no client terminals;
- `plan` is `plan_update` with the one plan's id `PLAN_ID`;
- commands and config options get v2's spelling;
- `current_mode_update` has no v2 update (None): the mode is a config option in v2.
"""

from __future__ import annotations

import difflib
import itertools
from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.events import _types as ev
from acpstack.events._kinds import UPDATE_KINDS
from acpstack.events._v1 import CANCELLED_META
from acpstack.schema import UnknownSessionUpdate

Json = dict[str, Any]
PLAN_ID = "plan"  # the id of v1's one plan

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(ev.KnownEvent).decode
_CHUNK_SPEAKERS: dict[type, str] = {
    ev.UserMessageChunk: "user",
    ev.AgentMessageChunk: "agent",
    ev.AgentThoughtChunk: "thought",
}


class MessageIds:
    """Ids v2 requires where a v1 history has none: a run of id-less chunks of one
    speaker is one message, named `<prefix><n>` (a replay numbers them the same way)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._counter = itertools.count(1)
        self._last: tuple[str, str] | None = None  # (speaker, id) of the last id-less run

    def message(self, speaker: str, given: Any) -> str:
        """The id of a chunk of `speaker` that came with the id `given` (or none)."""
        if isinstance(given, str):
            self._last = None
            return given
        if self._last is None or self._last[0] != speaker:
            self._last = (speaker, f"{self.prefix}{next(self._counter)}")
        return self._last[1]


# -- reading ---------------------------------------------------------------------------


def decode(data: bytes | str | Json | msgspec.Struct) -> ev.Event:
    """The event of a v2 update: its JSON (bytes or parsed) or a struct of
    `acpstack.schema.v2`/`v2_unstable`."""
    if type(data) is bytes:
        try:
            event: ev.Event = _decode(data)
        except msgspec.ValidationError:
            event = ev.decode_event(data)
        if type(event) in _CHUNK_SPEAKERS:
            return event  # the hot path: the same JSON as v1's
    elif isinstance(data, str):
        event = ev.decode_event(data)
    elif isinstance(data, dict):
        event = ev.event_from_json(data)
    else:
        if isinstance(data, UnknownSessionUpdate):
            return ev.UnknownEvent(data.data)
        json = msgspec.to_builtins(data)
        if isinstance(json, dict) and "sessionUpdate" not in json and "state" in json:
            json["sessionUpdate"] = "state_update"  # a state variant is tagged by `state`
        event = ev.event_from_json(json)
    return respelled(event)


def respelled(event: ev.Event) -> ev.Event:
    """An event read from v2's JSON as it is (say, by `events.SessionNotification`) in
    the events' spelling: commands and config options renamed to v1's."""
    if isinstance(event, ev.AvailableCommandsUpdate):
        commands = [_command_from_v2(c) for c in event.available_commands]
        return msgspec.structs.replace(event, available_commands=commands)
    if isinstance(event, ev.ConfigOptionUpdate):
        options = [_rename(o, "configId", "id", "groupId", "group") for o in event.config_options]
        return msgspec.structs.replace(event, config_options=options)
    return event


def _command_from_v2(command: Json) -> Json:
    out = {k: v for k, v in command.items() if k not in ("type", "input")}
    hint = command.get("input")
    if isinstance(hint, dict) and isinstance(hint.get("hint"), str):
        out["input"] = {"hint": hint["hint"]}
    return out


def _rename(option: Json, old: str, new: str, old_group: str, new_group: str) -> Json:
    out = {(new if k == old else k): v for k, v in option.items()}
    choices = out.get("options")
    if isinstance(choices, list):
        out["options"] = [
            {(new_group if k == old_group else k): v for k, v in c.items()}
            if isinstance(c, dict) and old_group in c
            else c
            for c in choices
        ]
    return out


# -- writing ---------------------------------------------------------------------------


def encode(event: ev.Event, ids: MessageIds, *, client_terminals: bool = False) -> bytes | None:
    """`event` as the JSON of a v2 `session/update` (the `update` member), None when v2
    has no such update."""
    speaker = _CHUNK_SPEAKERS.get(type(event))
    if speaker is not None:  # the hot path
        chunk: Any = event
        if type(chunk.message_id) is str:
            ids._last = None  # (what `ids.message` does with a given id, inlined)
            return _encode(chunk)
        chunk = msgspec.structs.replace(chunk, message_id=ids.message(speaker, UNSET))
        return _encode(chunk)
    if isinstance(event, ev.UnknownEvent):
        return _encode(event.data)
    json = _to_v2(event, client_terminals)
    return None if json is None else _encode(json)


def _to_v2(event: ev.EventStruct, client_terminals: bool) -> Json | None:
    if isinstance(event, ev.ToolCall | ev.ToolCallUpdate):
        return tool_call_to_v2(ev.event_json(event), client_terminals)
    if isinstance(event, ev.Plan):
        entries = msgspec.to_builtins(event.entries)
        plan = {"type": "items", "planId": PLAN_ID, "entries": entries}
        return {"sessionUpdate": "plan_update", "plan": plan, **_meta(ev.event_json(event))}
    if isinstance(event, ev.AvailableCommandsUpdate):
        json = ev.event_json(event)
        return {**json, "availableCommands": [_command_to_v2(c) for c in event.available_commands]}
    if isinstance(event, ev.ConfigOptionUpdate):
        json = ev.event_json(event)
        options = [config_option_to_v2(o) for o in event.config_options]
        return {**json, "configOptions": options}
    kind = UPDATE_KINDS[ev.kind_of(event)]
    if kind.v2 is None:
        return None  # current_mode_update: the mode is a config option in v2
    if isinstance(event, ev.ToolCallContentChunk):
        json = ev.event_json(event)
        item = tool_content_to_v2(json["content"], client_terminals)
        return None if item is None else {**json, "content": item}
    return ev.event_json(event)


def tool_call_to_v2(update: Json, client_terminals: bool = False) -> Json:
    """A `tool_call` or `tool_call_update` (neutral JSON) as v2's `tool_call_update`."""
    out = {**update, "sessionUpdate": "tool_call_update"}
    content = out.get("content")
    if isinstance(content, list):
        items = (tool_content_to_v2(c, client_terminals) for c in content)
        out["content"] = [c for c in items if c is not None]
    meta = out.get("_meta")
    if isinstance(meta, dict) and meta.get(CANCELLED_META) == "cancelled":
        out["status"] = "cancelled"  # v1's mark for v2's own status
        rest = {k: v for k, v in meta.items() if k != CANCELLED_META}
        if rest:
            out["_meta"] = rest
        else:
            del out["_meta"]
    return out


def tool_content_to_v2(item: Any, client_terminals: bool) -> Json | None:
    """A tool call's content item in v2's shape (None: v2 has no such item)."""
    if not isinstance(item, dict):
        return None
    if item.get("type") == "diff":
        return diff_to_v2(item)
    if item.get("type") == "terminal" and client_terminals:
        return None
    return item


def diff_to_v2(diff: Json) -> Json:
    """A diff with v2's `{changes, patch}`: as given, or made from v1's `{path, oldText,
    newText}` (a git patch, absolute paths without `a/`/`b/`, `/dev/null` for a new file)."""
    if "changes" in diff:
        return {k: v for k, v in diff.items() if k not in ("path", "oldText", "newText")}
    path = str(diff.get("path", ""))
    old = diff.get("oldText")
    new = str(diff.get("newText", ""))
    header = [f"diff --git {path} {path}"]
    if old is None:
        header.append("new file mode 100644")
    lines = difflib.unified_diff(
        [] if old is None else str(old).splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else path,
        tofile=path,
    )
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    change = {"operation": "add" if old is None else "modify", "path": path, "fileType": "text"}
    return {
        "type": "diff",
        "changes": [change],
        "patch": {"format": "git_patch", "text": "\n".join(header) + "\n" + body},
        **_meta(diff),
    }


def config_option_to_v2(option: Json) -> Json:
    """A config option (neutral JSON, v1's spelling) in v2's: `configId`, `groupId`."""
    return _rename(option, "id", "configId", "group", "groupId")


def _command_to_v2(command: Json) -> Json:
    out = {k: v for k, v in command.items() if k != "input"}
    out["type"] = "command"
    hint = command.get("input")
    if isinstance(hint, dict) and isinstance(hint.get("hint"), str):
        out["input"] = {"type": "text", "hint": hint["hint"]}
    return out


def _meta(obj: Json) -> Json:
    return {"_meta": obj["_meta"]} if "_meta" in obj else {}


__all__ = [
    "PLAN_ID",
    "MessageIds",
    "config_option_to_v2",
    "decode",
    "diff_to_v2",
    "encode",
    "respelled",
    "tool_call_to_v2",
    "tool_content_to_v2",
]
