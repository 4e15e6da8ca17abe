"""The version-neutral session events: one Struct per `session/update` kind.

An event's JSON (what a store records) is v1's JSON where v1 has the concept, so every
v1 update decodes straight into these types, and the message chunks (the hot path) have
the same JSON in v1, v2 and here. What v2 adds is here too: tool status `cancelled`,
tool-call `capabilities`, plans with a `planId` (`plan_update`, `plan_removed`), the
v2-only kinds (state, agent terminals, whole messages, tool-content chunks), a diff with
v2's `{changes, patch}` beside v1's `{path, oldText, newText}`.

Payload pieces with one shape in both versions reuse `acpstack.schema.v1`'s types: the
content blocks (`ContentBlock`), a tool call's `Content` and `Terminal` items and its
locations. Pieces whose shape differs between the versions or whose values are open in
v2 (commands, config options, plan entries' and tool calls' enums, capabilities, usage,
errors) are kept as their v1-spelled JSON (or plain strings): the codecs rename them at
the wire edge, and nothing is lost when a peer sends a value v1's `Literal` lacks.
"""

from __future__ import annotations

from typing import Any, get_args

import msgspec
from msgspec import UNSET, UnsetType, field

from acpstack.schema import v1

Json = dict[str, Any]
Meta = Json | None | UnsetType


class EventStruct(
    msgspec.Struct, kw_only=True, tag_field="sessionUpdate", repr_omit_defaults=True, gc=False
):
    """Base of every known event: tagged by its `sessionUpdate` kind. Not tracked by the
    cyclic garbage collector (`gc=False`), as every type here: events are trees of JSON
    values, and a long session log of tracked objects makes every full collection slow."""


# -- messages --------------------------------------------------------------------------


class _Chunk(EventStruct):
    content: v1.ContentBlock
    message_id: str | None | UnsetType = field(default=UNSET, name="messageId")
    meta: Meta = field(default=UNSET, name="_meta")


class UserMessageChunk(_Chunk, tag="user_message_chunk"):
    """A piece of the user's message."""


class AgentMessageChunk(_Chunk, tag="agent_message_chunk"):
    """A piece of the agent's message (the most frequent event)."""


class AgentThoughtChunk(_Chunk, tag="agent_thought_chunk"):
    """A piece of the agent's reasoning."""


class _Message(EventStruct):
    message_id: str = field(name="messageId")
    content: list[v1.ContentBlock] | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class UserMessage(_Message, tag="user_message"):
    """The user's whole message (v2): it replaces what the chunks of its id said."""


class AgentMessage(_Message, tag="agent_message"):
    """The agent's whole message (v2)."""


class AgentThought(_Message, tag="agent_thought"):
    """The agent's whole thought (v2)."""


class SessionMessageChunk(EventStruct, tag="session_message_chunk"):
    """A piece of a message between sessions (unstable)."""

    message_id: str = field(name="messageId")
    content: v1.ContentBlock
    meta: Meta = field(default=UNSET, name="_meta")


class SessionMessage(EventStruct, tag="session_message"):
    """A message between sessions (unstable)."""

    message_id: str = field(name="messageId")
    sender_session_id: str | None | UnsetType = field(default=UNSET, name="senderSessionId")
    recipient_session_id: str | None | UnsetType = field(default=UNSET, name="recipientSessionId")
    sender_message_id: str | None | UnsetType = field(default=UNSET, name="senderMessageId")
    recipient_message_id: str | None | UnsetType = field(default=UNSET, name="recipientMessageId")
    content: list[v1.ContentBlock] | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


# -- tool calls ------------------------------------------------------------------------


class Diff(
    msgspec.Struct, kw_only=True, tag="diff", tag_field="type", repr_omit_defaults=True, gc=False
):
    """A file change: v1's `{path, oldText, newText}` and/or v2's `{changes, patch}`
    (whichever the agent gave; each codec derives what its version needs)."""

    path: str | UnsetType = UNSET
    new_text: str | UnsetType = field(default=UNSET, name="newText")
    old_text: str | None | UnsetType = field(default=UNSET, name="oldText")
    changes: list[Json] | UnsetType = UNSET
    patch: Json | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


ToolCallContent = v1.Content | Diff | v1.Terminal


class ToolCall(EventStruct, tag="tool_call"):
    """A new tool call (v2 says it with the call's first `tool_call_update`)."""

    tool_call_id: str = field(name="toolCallId")
    title: str
    name: str | None | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    status: str | UnsetType = UNSET  # v1's statuses and v2's `cancelled`
    content: list[ToolCallContent] | UnsetType = UNSET
    locations: list[v1.ToolCallLocation] | UnsetType = UNSET
    raw_input: Any | UnsetType = field(default=UNSET, name="rawInput")
    raw_output: Any | UnsetType = field(default=UNSET, name="rawOutput")
    capabilities: Json | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class ToolCallUpdate(EventStruct, tag="tool_call_update"):
    """A change to a tool call (`null` clears a field, an absent one is left)."""

    tool_call_id: str = field(name="toolCallId")
    kind: str | None | UnsetType = UNSET
    status: str | None | UnsetType = UNSET
    title: str | None | UnsetType = UNSET
    name: str | None | UnsetType = UNSET
    content: list[ToolCallContent] | None | UnsetType = UNSET
    locations: list[v1.ToolCallLocation] | None | UnsetType = UNSET
    raw_input: Any | UnsetType = field(default=UNSET, name="rawInput")
    raw_output: Any | UnsetType = field(default=UNSET, name="rawOutput")
    capabilities: Json | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class ToolCallContentChunk(EventStruct, tag="tool_call_content_chunk"):
    """One more content item of a tool call (v2)."""

    tool_call_id: str = field(name="toolCallId")
    content: ToolCallContent
    meta: Meta = field(default=UNSET, name="_meta")


# -- plans -----------------------------------------------------------------------------


class PlanEntry(msgspec.Struct, kw_only=True, repr_omit_defaults=True, gc=False):
    """One step of a plan (priority and status as sent: v2's values are open)."""

    content: str
    priority: str
    status: str
    meta: Meta = field(default=UNSET, name="_meta")


class Plan(EventStruct, tag="plan"):
    """The session's one plan, whole (v1)."""

    entries: list[PlanEntry]
    meta: Meta = field(default=UNSET, name="_meta")


class PlanUpdate(EventStruct, tag="plan_update"):
    """One of the session's plans, by its `planId` (v2, v1 unstable); `plan` is its JSON."""

    plan: Json
    meta: Meta = field(default=UNSET, name="_meta")


class PlanRemoved(EventStruct, tag="plan_removed"):
    """A plan that is gone."""

    plan_id: str = field(name="planId")
    meta: Meta = field(default=UNSET, name="_meta")


# -- session settings and info ---------------------------------------------------------


class AvailableCommandsUpdate(EventStruct, tag="available_commands_update"):
    """The agent's commands, as v1 spells them (`{name, description, input: {hint}}`)."""

    available_commands: list[Json] = field(name="availableCommands")
    meta: Meta = field(default=UNSET, name="_meta")


class CurrentModeUpdate(EventStruct, tag="current_mode_update"):
    """The session's mode (v1; in v2 the mode is a config option)."""

    current_mode_id: str = field(name="currentModeId")
    meta: Meta = field(default=UNSET, name="_meta")


class ConfigOptionUpdate(EventStruct, tag="config_option_update"):
    """The session's config options, as v1 spells them (`id`, a group's `group`)."""

    config_options: list[Json] = field(name="configOptions")
    meta: Meta = field(default=UNSET, name="_meta")


class SessionInfoUpdate(EventStruct, tag="session_info_update"):
    """The session's title or time of its last change."""

    title: str | None | UnsetType = UNSET
    updated_at: str | None | UnsetType = field(default=UNSET, name="updatedAt")
    meta: Meta = field(default=UNSET, name="_meta")


class UsageUpdate(EventStruct, tag="usage_update"):
    """The context window's use (and the cost so far)."""

    used: int
    size: int
    cost: Json | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class Notice(EventStruct, tag="notice"):
    """Something the user should see that is not part of a message."""

    severity: str
    title: str
    description: str | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class CompactionUpdate(EventStruct, tag="compaction_update"):
    """The state of a compaction of the session's context."""

    compaction_id: str = field(name="compactionId")
    status: str
    summary: list[v1.ContentBlock] | None | UnsetType = UNSET
    error: str | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class CompactionSummaryChunk(EventStruct, tag="compaction_summary_chunk"):
    """A piece of a compaction's summary."""

    compaction_id: str = field(name="compactionId")
    content: v1.ContentBlock
    meta: Meta = field(default=UNSET, name="_meta")


class SubagentUpdate(EventStruct, tag="subagent_update"):
    """A child session of this one (unstable); its capabilities and state as JSON."""

    session_id: str = field(name="sessionId")
    title: str | None | UnsetType = UNSET
    description: str | None | UnsetType = UNSET
    capabilities: Json | None | UnsetType = UNSET
    state: Json | None | UnsetType = UNSET
    cwd: str | None | UnsetType = UNSET
    additional_directories: list[str] | None | UnsetType = field(
        default=UNSET, name="additionalDirectories"
    )
    meta: Meta = field(default=UNSET, name="_meta")


# -- turn state and agent terminals (v2) -----------------------------------------------


class StateUpdate(EventStruct, tag="state_update"):
    """The session is `idle` (with the turn's `stopReason`, `error`, `usage`), `running`
    or `requires_action`; one flat Struct, as its JSON is flat."""

    state: str
    stop_reason: str | None | UnsetType = field(default=UNSET, name="stopReason")
    error: Json | None | UnsetType = UNSET
    usage: Json | None | UnsetType = UNSET
    background: list[Json] | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class TerminalUpdate(EventStruct, tag="terminal_update"):
    """An agent terminal's command, output snapshot, exit status or capabilities (v2)."""

    terminal_id: str = field(name="terminalId")
    command: str | None | UnsetType = UNSET
    cwd: str | None | UnsetType = UNSET
    output: Json | None | UnsetType = UNSET
    exit_status: Json | None | UnsetType = field(default=UNSET, name="exitStatus")
    size: Json | None | UnsetType = UNSET
    capabilities: Json | None | UnsetType = UNSET
    meta: Meta = field(default=UNSET, name="_meta")


class TerminalOutputChunk(EventStruct, tag="terminal_output_chunk"):
    """More output of an agent terminal (base64, v2)."""

    terminal_id: str = field(name="terminalId")
    data: str
    meta: Meta = field(default=UNSET, name="_meta")


# -- the rest --------------------------------------------------------------------------


class UnknownEvent(msgspec.Struct, gc=False):
    """An update of a kind this library does not know (custom or newer), or one it cannot
    read, kept whole as its JSON object."""

    data: Json

    @property
    def session_update(self) -> str:
        """Its `sessionUpdate` tag ("" when it has none)."""
        tag = self.data.get("sessionUpdate")
        return tag if isinstance(tag, str) else ""


KnownEvent = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | UserMessage
    | AgentMessage
    | AgentThought
    | SessionMessageChunk
    | SessionMessage
    | ToolCall
    | ToolCallUpdate
    | ToolCallContentChunk
    | Plan
    | PlanUpdate
    | PlanRemoved
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | Notice
    | CompactionUpdate
    | CompactionSummaryChunk
    | SubagentUpdate
    | StateUpdate
    | TerminalUpdate
    | TerminalOutputChunk
)
Event = KnownEvent | UnknownEvent


class SessionNotification(msgspec.Struct, kw_only=True, gc=False):
    """The params of a `session/update` with its update read as an event, in one msgspec
    pass (`ClientRuntime` takes its updates so, in either protocol version). Named as the
    schema's params type is, so the wire's lenient reading keeps an update of an unknown
    kind whole (an `UnknownSessionUpdate`) as it does for that type."""

    session_id: str = field(name="sessionId")
    update: KnownEvent
    meta: Meta = field(default=UNSET, name="_meta")

    @classmethod
    def read_leniently(cls, params: Any) -> SessionNotification | None:
        """Params that did not validate (the wire asks before it refuses them): an update
        holding a content block of a type this library does not know (v2's content is an
        open union) is kept whole, as an `UnknownEvent`; anything else stays invalid."""
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
            return None
        update = params.get("update")
        if not isinstance(update, dict) or not _has_unknown_block(update):
            return None
        if isinstance(event_from_json(_known_blocks(update)), UnknownEvent):
            return None  # invalid for another reason too
        notification = cls(session_id=params["sessionId"], update=UserMessageChunk(content=_EMPTY))
        notification.update = UnknownEvent(update)  # type: ignore[assignment]
        return notification


# What a `content` member may hold: content blocks and a tool call's content items.
_CONTENT_TYPES = frozenset(
    {"text", "image", "audio", "resource_link", "resource", "content", "diff", "terminal"}
)
_EMPTY = v1.TextContent(text="")
_EMPTY_JSON = {"type": "text", "text": ""}


def _known_blocks(value: Any) -> Any:
    """`value` with each object `_has_unknown_block` finds replaced by an empty text block."""
    if isinstance(value, list):
        return [_known_blocks(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {k: _known_blocks(v) for k, v in value.items()}
    content = value.get("content")
    if isinstance(content, dict) and content.get("type") not in _CONTENT_TYPES:
        out["content"] = _EMPTY_JSON
    elif isinstance(content, list):
        out["content"] = [
            _EMPTY_JSON
            if isinstance(item, dict) and item.get("type") not in _CONTENT_TYPES
            else _known_blocks(item)
            for item in content
        ]
    return out


def _has_unknown_block(value: Any) -> bool:
    """An object under a `content` member (or in a list there), anywhere in `value`, of a
    `type` this library does not know (v2's content blocks and tool content are open)."""
    if isinstance(value, list):
        return any(_has_unknown_block(item) for item in value)
    if not isinstance(value, dict):
        return False
    content = value.get("content")
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, dict) and item.get("type") not in _CONTENT_TYPES:
            return True
    return any(_has_unknown_block(v) for v in value.values() if isinstance(v, list | dict))


EVENT_TYPES: dict[str, type[EventStruct]] = {
    cls.__struct_config__.tag: cls for cls in get_args(KnownEvent)
}
"""Each known kind's Struct, by its `sessionUpdate` tag."""

_decode = msgspec.json.Decoder(KnownEvent).decode
_encode = msgspec.json.Encoder().encode


def decode_event(data: bytes | str) -> Event:
    """The event of one update's (or stored event's) JSON; an unknown kind, or one this
    library cannot read, is an `UnknownEvent`. JSON that is not an object raises
    `msgspec.DecodeError`/`ValidationError`."""
    try:
        event: KnownEvent = _decode(data)
    except msgspec.ValidationError:
        raw = msgspec.json.decode(data)
        if not isinstance(raw, dict):
            raise
        return UnknownEvent(raw)
    return event


def event_from_json(obj: Json) -> Event:
    """The event of an update's JSON object (already parsed)."""
    kind = obj.get("sessionUpdate")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return UnknownEvent(obj)
    try:
        event: KnownEvent = msgspec.convert(obj, cls)  # type: ignore[assignment]
    except msgspec.ValidationError:
        return UnknownEvent(obj)
    return event


def kind_of(event: EventStruct | UnknownEvent) -> str:
    """The `sessionUpdate` tag of `event`."""
    if isinstance(event, UnknownEvent):
        return event.session_update
    return str(type(event).__struct_config__.tag)


def encode_event(event: Event) -> bytes:
    """The neutral JSON of `event` (what a store records)."""
    if type(event) is UnknownEvent:  # (`type`, not `isinstance`: this is the hot path)
        return _encode(event.data)
    return _encode(event)


def event_json(event: EventStruct | UnknownEvent) -> Json:
    """The neutral JSON object of `event`."""
    if isinstance(event, UnknownEvent):
        return event.data
    out: Json = msgspec.to_builtins(event)
    return out
