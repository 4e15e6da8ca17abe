"""A session's state as its `session/update` stream builds it: what a UI renders.

The state keeps the version-neutral events (`acpstack.events`): `ClientRuntime` reads
each update of a v1 or a v2 connection straight into one, and `SessionState.apply` takes
them in order (a v1 update of `acpstack.schema.v1` is read as its event first).
- Message chunks are joined by `messageId`; a changed id (or a change of speaker)
  starts a new message. A whole message (v2 `agent_message`, ...) replaces the content
  of the message with its id.
- Tool calls are merged by id: `tool_call_update` replaces only the fields it carries;
  `content` and `locations` replace whole arrays, `tool_call_content_chunk` appends an
  item. An update for an unknown id creates it (v2 announces a call that way). Kind and
  status are kept as the agent sent them; a v1 `failed` with acpstack's cancelled mark
  is `cancelled`, v2's spelling. `cancellable`: `capabilities.cancel` is advertised.
- The plan (v1's `plan`, or v2's `plan_update` of type `items`), available commands and
  config options are replaced whole; every plan by id is in `plans` as sent. The option
  of category `mode` sets `current_mode_id` too (v2 has no mode update).
- Notices are kept (the last 100) in `notices`; compactions by id in `compactions` (a
  chunk appends to the summary, an update patches status/summary/error).
- Unstable: `subagent_update` patches `subagents[child id]` (title, description, state,
  ...: omitted = unchanged, null = cleared); `session_message` patches and
  `session_message_chunk` appends to `session_messages[message id]`.
- Protocol v2: `state` is the agent's foreground state (`idle`, `running`,
  `requires_action`, or a newer one: busy), `stop_reason` and `error` what the last idle
  reported; `agent_terminals` the agent's display terminals. A v1 agent's turn leaves
  `state` idle (ClientRuntime sets `stop_reason` when the prompt returns).
- Unknown update kinds are kept whole in `unknown_updates`, not dropped.
- Which method applies each kind: the table at the end (`events.UpdateDispatch`, which
  refuses a table that misses a kind).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET

import acpstack.events as events
from acpstack.events import v1 as events_v1
from acpstack.schema import UnknownSessionUpdate
from acpstack.schema import v1 as acp

log = logging.getLogger("acpstack.client")
Speaker = events.Speaker


@dataclass
class Message:
    """One message of the conversation: who spoke (`user`, `agent` or `thought`), the
    `messageId` its chunks carried, and its content blocks joined in order."""

    speaker: Speaker
    message_id: str | None
    content: list[acp.ContentBlock] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The message's text blocks joined."""
        return "".join(block.text for block in self.content if isinstance(block, acp.TextContent))


@dataclass
class ToolCallState:
    """A tool call as its `tool_call` and `tool_call_update`s left it (see the module's
    doc for how updates merge). `content` items are `acp.Content`, `acp.Terminal` or
    `events.Diff` (v1's old and new text and/or v2's changes and patch). `cancellable`:
    it advertises `capabilities.cancel` now (protocol v2: `ClientRuntime.cancel_tool_call`
    may cancel it)."""

    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    content: list[events.ToolCallContent] = field(default_factory=list)
    locations: list[acp.ToolCallLocation] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    cancellable: bool = False


@dataclass
class CompactionState:
    compaction_id: str
    status: str = "in_progress"
    summary: list[acp.ContentBlock] = field(default_factory=list)
    error: str | None = None


@dataclass
class SubagentState:
    """A child session the agent announced (`subagent_update`), as last patched."""

    session_id: str
    fields: dict[str, Any] = field(default_factory=dict)  # title, description, state, cwd, ...

    @property
    def title(self) -> str | None:
        return self.fields.get("title")

    @property
    def state(self) -> str | None:
        """The child's current activity (`running`, `idle`, ...), None if not reported."""
        state = self.fields.get("state")
        return state.get("state") if isinstance(state, dict) else None


@dataclass
class SessionMessageState:
    """An inter-session message (`session_message` / `session_message_chunk`)."""

    message_id: str
    fields: dict[str, Any] = field(default_factory=dict)  # sender/recipient ids and references
    content: list[Any] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(getattr(block, "text", "") for block in self.content)


@dataclass
class AgentTerminal:
    """A terminal the agent runs and shows (protocol v2 `terminal_update`): display only.
    `cancellable`: it advertises `capabilities.cancel` now (`ClientRuntime.cancel_terminal`
    may stop its command)."""

    terminal_id: str
    command: str | None = None
    output: bytearray = field(default_factory=bytearray)
    exited: bool = False
    exit_code: int | None = None
    signal: str | None = None
    cancellable: bool = False


MAX_NOTICES = 100


@dataclass
class SessionState:
    """One session as its `session/update` stream built it (see the module's doc): apply
    every update in order with `apply`; a UI renders the fields."""

    session_id: str
    messages: list[Message] = field(default_factory=list)
    tool_calls: dict[str, ToolCallState] = field(default_factory=dict)
    plan: list[events.PlanEntry] = field(default_factory=list)
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)  # v2 plans by planId, as sent
    available_commands: list[acp.AvailableCommand] = field(default_factory=list)
    current_mode_id: str | None = None
    available_modes: list[acp.SessionMode] = field(default_factory=list)
    config_options: list[acp.SessionConfigOption] = field(default_factory=list)
    title: str | None = None
    updated_at: str | None = None
    usage: events.UsageUpdate | None = None
    notices: list[events.Notice] = field(default_factory=list)
    compactions: dict[str, CompactionState] = field(default_factory=dict)
    subagents: dict[str, SubagentState] = field(default_factory=dict)
    session_messages: dict[str, SessionMessageState] = field(default_factory=dict)
    open_elicitations: set[str] = field(default_factory=set)  # URL elicitations accepted
    unknown_updates: list[dict[str, Any]] = field(default_factory=list)
    state: str = "idle"
    stop_reason: str | None = None
    error: dict[str, Any] | None = None  # what the last idle reported (v2: stopReason error)
    agent_terminals: dict[str, AgentTerminal] = field(default_factory=dict)
    # Notifications for this session that arrived but had to be discarded (too large,
    # invalid): the state may be missing an update. See `Client.on_message_dropped`.
    dropped_messages: int = 0
    # The plan `plan` shows (v2: the last plan of type `items`); None: v1's one plan.
    _plan_id: str | None = field(default=None, repr=False, compare=False)

    def apply(self, update: events.Event | acp.SessionUpdate | UnknownSessionUpdate) -> None:
        """Apply one update (see the module's doc for how each kind changes the state; an
        unknown kind is kept in `unknown_updates`)."""
        _APPLY.handler(update)(self, update)

    def seed(
        self,
        response: acp.NewSessionResponse | acp.LoadSessionResponse | acp.ResumeSessionResponse,
    ) -> None:
        """Take the modes and config options a session/new, load or resume answer carries
        (the agent sends no update for them: they are the starting state)."""
        if isinstance(response.modes, acp.SessionModeState):
            self.current_mode_id = response.modes.current_mode_id
            self.available_modes = list(response.modes.available_modes)
        if isinstance(response.config_options, list):
            self.set_config_options(list(response.config_options))

    def set_config_options(self, options: list[acp.SessionConfigOption]) -> None:
        """The session's config options, whole; the option of category `mode` is the mode."""
        self.config_options = options
        for option in options:
            if option.category == "mode" and isinstance(option.current_value, str):
                self.current_mode_id = option.current_value

    def replace_message(
        self, speaker: Speaker, message_id: str, content: list[acp.ContentBlock]
    ) -> bool:
        """Set the whole content of a message (v2 upserts); True if it is a new message."""
        for message in reversed(self.messages):
            if message.message_id == message_id and message.speaker == speaker:
                message.content = list(content)
                return False
        self.messages.append(Message(speaker, message_id, list(content)))
        return True

    @property
    def last_agent_message(self) -> Message | None:
        """The agent's most recent message, or None before it said anything."""
        for message in reversed(self.messages):
            if message.speaker == "agent":
                return message
        return None

    # -- messages --------------------------------------------------------------------------

    def _chunk(self, speaker: Speaker, chunk: Any) -> None:
        message_id = chunk.message_id if type(chunk.message_id) is str else None
        last = self.messages[-1] if self.messages else None
        if last is None or last.speaker != speaker or last.message_id != message_id:
            last = Message(speaker, message_id)
            self.messages.append(last)
        last.content.append(chunk.content)

    def _whole_message(self, speaker: Speaker, message: Any) -> None:
        if message.content is not UNSET:  # (absent: only its `_meta` changed)
            self.replace_message(speaker, message.message_id, list(message.content or []))

    # -- tool calls ------------------------------------------------------------------------

    def _tool_call(self, call: events.ToolCall) -> None:
        self.tool_calls[call.tool_call_id] = ToolCallState(
            tool_call_id=call.tool_call_id,
            title=call.title,
            kind=call.kind if isinstance(call.kind, str) else "other",
            status=_status(call) or "pending",
            content=list(call.content) if isinstance(call.content, list) else [],
            locations=list(call.locations) if isinstance(call.locations, list) else [],
            raw_input=None if call.raw_input is UNSET else call.raw_input,
            raw_output=None if call.raw_output is UNSET else call.raw_output,
            cancellable=_cancellable(call.capabilities, False),
        )

    def _tool(self, tool_call_id: str) -> ToolCallState:
        state = self.tool_calls.get(tool_call_id)
        if state is None:
            state = self.tool_calls[tool_call_id] = ToolCallState(tool_call_id)
        return state

    def _tool_call_update(self, update: events.ToolCallUpdate) -> None:
        state = self._tool(update.tool_call_id)
        if isinstance(update.title, str):
            state.title = update.title
        if isinstance(update.kind, str):
            state.kind = update.kind
        status = _status(update)
        if status is not None:
            state.status = status
        if update.content is not UNSET:
            state.content = list(update.content or [])
        if update.locations is not UNSET:
            state.locations = list(update.locations or [])
        if update.raw_input is not UNSET:
            state.raw_input = update.raw_input
        if update.raw_output is not UNSET:
            state.raw_output = update.raw_output
        state.cancellable = _cancellable(update.capabilities, state.cancellable)

    def _tool_call_content(self, chunk: events.ToolCallContentChunk) -> None:
        self._tool(chunk.tool_call_id).content.append(chunk.content)

    # -- plans, settings, info -------------------------------------------------------------

    def _plan(self, update: events.Plan) -> None:
        self.plan = list(update.entries)
        self._plan_id = None

    def _plan_update(self, update: events.PlanUpdate) -> None:
        plan = update.plan
        plan_id = plan.get("planId")
        if not isinstance(plan_id, str):
            self._keep_unknown(update)
            return
        self.plans[plan_id] = plan
        if plan.get("type") == "items" and isinstance(plan.get("entries"), list):
            self.plan = [e for e in map(_plan_entry, plan["entries"]) if e is not None]
            self._plan_id = plan_id

    def _plan_removed(self, update: events.PlanRemoved) -> None:
        self.plans.pop(update.plan_id, None)
        if update.plan_id == self._plan_id:
            self.plan, self._plan_id = [], None

    def _available_commands(self, update: events.AvailableCommandsUpdate) -> None:
        self.available_commands = _valid(update.available_commands, acp.AvailableCommand)

    def _current_mode(self, update: events.CurrentModeUpdate) -> None:
        self.current_mode_id = update.current_mode_id

    def _config_options(self, update: events.ConfigOptionUpdate) -> None:
        # An option of a type this client does not know is left out, as clients should.
        self.set_config_options(_valid(update.config_options, acp.SessionConfigOption))

    def _session_info(self, update: events.SessionInfoUpdate) -> None:
        # Omitted = unchanged, null = cleared.
        if update.title is not UNSET:
            self.title = update.title
        if update.updated_at is not UNSET:
            self.updated_at = update.updated_at

    def _usage(self, update: events.UsageUpdate) -> None:
        self.usage = update

    def _notice(self, update: events.Notice) -> None:
        self.notices = [*self.notices[-(MAX_NOTICES - 1) :], update]

    def _compaction(self, update: events.CompactionUpdate | events.CompactionSummaryChunk) -> None:
        state = self.compactions.get(update.compaction_id)
        if state is None:
            state = self.compactions[update.compaction_id] = CompactionState(update.compaction_id)
        if isinstance(update, events.CompactionSummaryChunk):
            state.summary.append(update.content)
            return
        state.status = str(update.status)
        if update.summary is not UNSET:
            state.summary = list(update.summary or [])
        if update.error is not UNSET:
            state.error = update.error

    # -- subagents and messages between sessions (unstable) --------------------------------

    def _subagent(self, update: events.SubagentUpdate) -> None:
        raw = _present_fields(update)
        child = self.subagents.setdefault(update.session_id, SubagentState(update.session_id))
        child.fields.update((k, v) for k, v in raw.items() if k != "sessionId")

    def _session_message(self, update: events.SessionMessage) -> None:
        raw = _present_fields(update)
        message = self._message_state(update.message_id)
        if "content" in raw:
            message.content = list(update.content or [])
        message.fields.update((k, v) for k, v in raw.items() if k not in ("content", "messageId"))

    def _session_message_chunk(self, update: events.SessionMessageChunk) -> None:
        self._message_state(update.message_id).content.append(update.content)

    def _message_state(self, message_id: str) -> SessionMessageState:
        message = self.session_messages.get(message_id)
        if message is None:
            message = self.session_messages[message_id] = SessionMessageState(message_id)
        return message

    # -- the turn's state and the agent's terminals (v2) -----------------------------------

    def _state_update(self, update: events.StateUpdate) -> None:
        self.state = update.state
        if update.state == "idle":
            # A repeated idle snapshot may carry the last stop reason again: it is not a
            # new completion (ClientRuntime.prompt waits for the idle after its prompt).
            stop = update.stop_reason
            self.stop_reason = stop if isinstance(stop, str) else None
            self.error = update.error if isinstance(update.error, dict) else None

    def _terminal(self, update: events.TerminalUpdate) -> None:
        terminal = self._agent_terminal(update.terminal_id)
        output = update.output
        if isinstance(output, dict) and isinstance(output.get("data"), str):
            terminal.output = bytearray(_bytes(output["data"], terminal.terminal_id))
        if isinstance(update.command, str):
            terminal.command = update.command
        terminal.cancellable = _cancellable(update.capabilities, terminal.cancellable)
        status = update.exit_status
        if isinstance(status, dict):
            terminal.exited = True
            code, signal = status.get("exitCode"), status.get("signal")
            terminal.exit_code = code if isinstance(code, int) else None
            terminal.signal = signal if isinstance(signal, str) else None

    def _terminal_output(self, chunk: events.TerminalOutputChunk) -> None:
        terminal = self._agent_terminal(chunk.terminal_id)
        terminal.output += _bytes(chunk.data, chunk.terminal_id)

    def _agent_terminal(self, terminal_id: str) -> AgentTerminal:
        return self.agent_terminals.setdefault(terminal_id, AgentTerminal(terminal_id))

    # -- anything else -----------------------------------------------------------------------

    def _other(self, update: Any) -> None:
        """No event kind: a v1 update of the schema's types (read as its event), or an
        update of a kind nobody knows, kept whole."""
        if isinstance(update, events.UnknownEvent | UnknownSessionUpdate):
            self.unknown_updates.append(update.data)
        elif isinstance(update, msgspec.Struct):
            event = events_v1.decode(update)
            if isinstance(event, events.UnknownEvent):
                self.unknown_updates.append(event.data)
            else:
                self.apply(event)
        else:
            self.unknown_updates.append({"value": update})

    def _keep_unknown(self, update: Any) -> None:
        self.unknown_updates.append(events.event_json(update))


def _status(update: events.ToolCall | events.ToolCallUpdate) -> str | None:
    """The status as v2 spells it: v1's `failed` with acpstack's cancelled mark is
    `cancelled` (an agent on acpstack sends that for a cancelled call on v1)."""
    status = update.status
    if not isinstance(status, str):
        return None
    meta = update.meta
    if status == "failed" and isinstance(meta, dict):
        if meta.get(events_v1.CANCELLED_META) == "cancelled":
            return "cancelled"
    return status


def _cancellable(capabilities: Any, was: bool) -> bool:
    """A `capabilities` patch of a tool call or terminal: omitted leaves it, `null`
    clears it, an object replaces it (cancellable if its `cancel` is an object)."""
    if capabilities is UNSET:
        return was
    return isinstance(capabilities, dict) and isinstance(capabilities.get("cancel"), dict)


def _plan_entry(entry: Any) -> events.PlanEntry | None:
    try:
        return msgspec.convert(entry, events.PlanEntry)
    except msgspec.ValidationError:
        return None


def _valid(items: list[dict[str, Any]], tp: type[Any]) -> list[Any]:
    """`items` (JSON in v1's spelling) as `tp`, leaving out those it cannot hold."""
    out = []
    for item in items:
        try:
            out.append(msgspec.convert(item, tp))
        except msgspec.ValidationError:
            log.info("left out a %s this client cannot read", tp.__name__)
    return out


def _bytes(data: str, terminal_id: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        log.warning("terminal %s: output that is not base64 was left out", terminal_id)
        return b""


def _present_fields(update: Any) -> dict[str, Any]:
    """The update's fields that are present, by their camelCase names (tag left out)."""
    raw: dict[str, Any] = msgspec.to_builtins(update)
    raw.pop("sessionUpdate", None)
    return raw


def _by_speaker(method: Callable[[SessionState, Speaker, Any], None], speaker: Speaker) -> Any:
    def apply(state: SessionState, update: Any) -> None:
        method(state, speaker, update)

    return apply


def update_kind(update: object) -> str | None:
    """The kind (`sessionUpdate` tag) of an event, None for anything else (an
    `UnknownEvent`, a custom or newer kind kept whole)."""
    return events.event_kind(type(update))


_SPEAKERS = {tag: kind.speaker for tag, kind in events.UPDATE_KINDS.items() if kind.speaker}
_APPLY: events.UpdateDispatch[Callable[[SessionState, Any], None]] = events.UpdateDispatch(
    {
        **{
            tag: _by_speaker(
                SessionState._chunk if tag.endswith("_chunk") else SessionState._whole_message,
                speaker,
            )
            for tag, speaker in _SPEAKERS.items()
        },
        "tool_call": SessionState._tool_call,
        "tool_call_update": SessionState._tool_call_update,
        "tool_call_content_chunk": SessionState._tool_call_content,
        "plan": SessionState._plan,
        "plan_update": SessionState._plan_update,
        "plan_removed": SessionState._plan_removed,
        "available_commands_update": SessionState._available_commands,
        "current_mode_update": SessionState._current_mode,
        "config_option_update": SessionState._config_options,
        "session_info_update": SessionState._session_info,
        "usage_update": SessionState._usage,
        "notice": SessionState._notice,
        "compaction_update": SessionState._compaction,
        "compaction_summary_chunk": SessionState._compaction,
        "subagent_update": SessionState._subagent,
        "session_message": SessionState._session_message,
        "session_message_chunk": SessionState._session_message_chunk,
        "state_update": SessionState._state_update,
        "terminal_update": SessionState._terminal,
        "terminal_output_chunk": SessionState._terminal_output,
    },
    unknown=SessionState._other,
)
