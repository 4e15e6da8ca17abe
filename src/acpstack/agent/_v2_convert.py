"""How a `SessionAgent`'s updates look on a protocol version 2 connection.

The runtime's model of a session (what `Turn` writes and the store keeps) has the v1
shape; a v2 connection gets the same history in v2's shape, mapped here, in one place,
for live updates and for replay alike (JSON objects in, JSON objects out):

- message chunks keep (or get) a `messageId`, which v2 requires;
- `tool_call` becomes the first `tool_call_update` (which creates the call in v2); a
  call the client cancelled (`failed` with `_meta["acpstack/status"]: "cancelled"`, as
  v1 has no such status) has status `cancelled`;
- a diff `{path, oldText, newText}` becomes `{changes, patch}` with a git patch;
- `plan` becomes `plan_update` with the session's one item plan;
- commands get their `type`, their input a tagged `{type: "text", hint}`;
- config options are named `configId` (and groups `groupId`);
- `current_mode_update` is dropped: v2 has no modes (the mode is a config option, and
  `config_option_update` goes with every mode change);
- a client terminal embedded in a tool call (v1 only) is left out.

Content blocks have the same shape in both versions.
"""

from __future__ import annotations

import difflib
import itertools
from typing import Any

Json = dict[str, Any]

_CHUNKS = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}
_TOOL_FIELDS = ("title", "kind", "status", "content", "locations", "rawInput", "rawOutput")
_PASS = frozenset(
    {
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
        "plan_update",
        "plan_removed",
    }
)


PLAN_ID = "plan"  # a session of this runtime has one item plan
CANCELLED_META = "acpstack/status"  # {CANCELLED_META: "cancelled"}: see tool_call_to_v2


class MessageIds:
    """Ids v2 requires where the v1 history has none: a run of id-less chunks of one
    speaker is one message, named `<prefix><n>` (a replay numbers them the same way
    every time)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._counter = itertools.count(1)
        self._last: tuple[str, str] | None = None  # (speaker, id) of the last id-less run

    def message(self, speaker: str, given: Any) -> str:
        if isinstance(given, str):
            self._last = None
            return given
        if self._last is None or self._last[0] != speaker:
            self._last = (speaker, f"{self.prefix}{next(self._counter)}")
        return self._last[1]


def update_to_v2(update: Json, ids: MessageIds) -> list[Json]:
    """One update of the runtime's model as the v2 updates that say the same (0 or 1)."""
    kind = update.get("sessionUpdate")
    if kind in _CHUNKS:
        return [{**update, "messageId": ids.message(_CHUNKS[kind], update.get("messageId"))}]
    if kind in ("tool_call", "tool_call_update"):
        return [tool_call_to_v2(update)]
    if kind == "plan":
        plan = {"type": "items", "planId": PLAN_ID, "entries": update.get("entries", [])}
        return [{"sessionUpdate": "plan_update", "plan": plan, **_meta(update)}]
    if kind == "available_commands_update":
        commands = [command_to_v2(c) for c in update.get("availableCommands", [])]
        return [{**update, "availableCommands": commands}]
    if kind == "config_option_update":
        options = [config_option_to_v2(o) for o in update.get("configOptions", [])]
        return [{**update, "configOptions": options}]
    if kind in _PASS:
        return [update]
    return []  # current_mode_update (no modes in v2), and what v2 does not know


def tool_call_to_v2(update: Json) -> Json:
    out: Json = {"sessionUpdate": "tool_call_update", "toolCallId": update.get("toolCallId")}
    for name in _TOOL_FIELDS:
        if name in update:
            out[name] = update[name]
    if isinstance(out.get("content"), list):
        out["content"] = [c for c in map(tool_content_to_v2, out["content"]) if c is not None]
    meta = update.get("_meta")
    if isinstance(meta, dict) and meta.get(CANCELLED_META) == "cancelled":
        out["status"] = "cancelled"  # v2's own status (the model's is "failed")
        meta = {k: v for k, v in meta.items() if k != CANCELLED_META}
        if meta:
            out["_meta"] = meta
        return out
    out.update(_meta(update))
    return out


def tool_content_to_v2(item: Any) -> Json | None:
    if not isinstance(item, dict):
        return None
    if item.get("type") == "diff":
        return diff_to_v2(item)
    if item.get("type") == "terminal":
        return None  # a client terminal: there are none in v2
    return item


def diff_to_v2(diff: Json) -> Json:
    """`{path, oldText, newText}` as structured changes plus a git patch (absolute paths
    without `a/`/`b/` prefixes, `/dev/null` for a new file, as v2 asks)."""
    path = str(diff.get("path", ""))
    old = diff.get("oldText")
    new = str(diff.get("newText", ""))
    operation = "add" if old is None else "modify"
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
    change = {"operation": operation, "path": path, "fileType": "text"}
    return {
        "type": "diff",
        "changes": [change],
        "patch": {"format": "git_patch", "text": "\n".join(header) + "\n" + body},
        **_meta(diff),
    }


def command_to_v2(command: Json) -> Json:
    out = {k: v for k, v in command.items() if k != "input"}
    out["type"] = "command"
    hint = command.get("input")
    if isinstance(hint, dict) and isinstance(hint.get("hint"), str):
        out["input"] = {"type": "text", "hint": hint["hint"]}
    return out


def config_option_to_v2(option: Json) -> Json:
    out = {k: v for k, v in option.items() if k != "id"}
    out["configId"] = option.get("id")
    choices = option.get("options")
    if isinstance(choices, list):
        out["options"] = [_choice_to_v2(c) for c in choices]
    return out


def _choice_to_v2(choice: Any) -> Any:
    if isinstance(choice, dict) and "group" in choice:
        group = {k: v for k, v in choice.items() if k != "group"}
        group["groupId"] = choice["group"]
        return group
    return choice


def _meta(obj: Json) -> Json:
    return {"_meta": obj["_meta"]} if "_meta" in obj else {}


__all__ = [
    "CANCELLED_META",
    "PLAN_ID",
    "MessageIds",
    "command_to_v2",
    "config_option_to_v2",
    "diff_to_v2",
    "tool_call_to_v2",
    "tool_content_to_v2",
    "update_to_v2",
]
