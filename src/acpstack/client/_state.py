"""A session's state as the `session/update` stream builds it: what a UI renders.

Apply every `session/update` of one session in order with `SessionState.apply`.
- Message chunks are joined by `messageId`; a changed id (or a change of speaker)
  starts a new message.
- Tool calls are merged by id: `tool_call_update` replaces only the fields it carries;
  `content` and `locations` replace whole arrays. An update for an unknown id creates it.
- The plan, available commands and config options are replaced whole.
- Notices are kept (the last 100) in `notices`; compactions by id in `compactions` (a
  chunk appends to the summary, an update patches status/summary/error).
- Unstable: `subagent_update` patches `subagents[child id]` (title, description, state,
  ...: omitted = unchanged, null = cleared); `session_message` patches and
  `session_message_chunk` appends to `session_messages[message id]`.
- Unknown update kinds are kept in `unknown_updates`, not dropped (so are the unstable
  `plan_update` and `plan_removed`, which this model does not hold).
- Which method applies each kind: the table at the end, checked against every kind of
  `_update_kinds.py`.
- Protocol v2 (see `_v2_view.py`): `state` is the agent's foreground state (`idle`,
  `running`, `requires_action`, or a newer one: busy), `stop_reason` and `error` what the
  last idle reported; `agent_terminals` the agent's display terminals. A v1 agent's turn
  leaves `state` idle (ClientRuntime sets `stop_reason` when the prompt returns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.client._update_kinds import UPDATE_KINDS, UpdateDispatch
from acpstack.client._update_kinds import Speaker as Speaker  # re-exported for `_v2_view.py`
from acpstack.schema import UnknownSessionUpdate
from acpstack.schema import v1 as acp


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
    doc for how updates merge). `cancellable`: it advertises `capabilities.cancel` now
    (protocol v2: `ClientRuntime.cancel_tool_call` may cancel it)."""

    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    content: list[acp.ToolCallContent] = field(default_factory=list)
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
    plan: list[acp.PlanEntry] = field(default_factory=list)
    available_commands: list[acp.AvailableCommand] = field(default_factory=list)
    current_mode_id: str | None = None
    available_modes: list[acp.SessionMode] = field(default_factory=list)
    config_options: list[acp.SessionConfigOption] = field(default_factory=list)
    title: str | None = None
    updated_at: str | None = None
    usage: acp.UsageUpdate | None = None
    notices: list[acp.Notice] = field(default_factory=list)
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

    def apply(self, update: acp.SessionUpdate | UnknownSessionUpdate) -> None:
        """Apply one `session/update` (see the module's doc for how each kind changes the
        state; an unknown kind is kept in `unknown_updates`)."""
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
            self.config_options = list(response.config_options)

    def _compaction(self, update: acp.CompactionUpdate | acp.CompactionSummaryChunk) -> None:
        state = self.compactions.get(update.compaction_id)
        if state is None:
            state = self.compactions[update.compaction_id] = CompactionState(update.compaction_id)
        if isinstance(update, acp.CompactionSummaryChunk):
            state.summary.append(update.content)
            return
        state.status = str(update.status)
        if update.summary is not UNSET:
            state.summary = list(update.summary or [])
        if update.error is not UNSET:
            state.error = update.error

    def _subagent(self, update: Any) -> None:
        raw = _present_fields(update)
        child = self.subagents.setdefault(update.session_id, SubagentState(update.session_id))
        child.fields.update((k, v) for k, v in raw.items() if k != "sessionId")

    def _session_message(self, update: Any) -> None:
        raw = _present_fields(update)
        message = self._message_state(update.message_id)
        if "content" in raw:
            message.content = list(update.content or [])
        message.fields.update((k, v) for k, v in raw.items() if k not in ("content", "messageId"))

    def _session_message_chunk(self, update: Any) -> None:
        self._message_state(update.message_id).content.append(update.content)

    def _message_state(self, message_id: str) -> SessionMessageState:
        message = self.session_messages.get(message_id)
        if message is None:
            message = self.session_messages[message_id] = SessionMessageState(message_id)
        return message

    def _keep_unknown(self, update: Any) -> None:
        """A kind this model does not hold (custom, newer, or one it leaves to the
        application such as the unstable `plan_update`): kept as its JSON object."""
        if isinstance(update, UnknownSessionUpdate):
            self.unknown_updates.append(update.data)
        else:
            self.unknown_updates.append(msgspec.to_builtins(update))

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

    def _chunk(self, speaker: Speaker, chunk: acp.ContentChunk) -> None:
        message_id = chunk.message_id if isinstance(chunk.message_id, str) else None
        last = self.messages[-1] if self.messages else None
        if last is None or last.speaker != speaker or last.message_id != message_id:
            last = Message(speaker, message_id)
            self.messages.append(last)
        last.content.append(chunk.content)

    def _tool_call(self, call: acp.ToolCall) -> None:
        self.tool_calls[call.tool_call_id] = ToolCallState(
            tool_call_id=call.tool_call_id,
            title=call.title,
            kind=call.kind if isinstance(call.kind, str) else "other",
            status=call.status if isinstance(call.status, str) else "pending",
            content=list(call.content) if isinstance(call.content, list) else [],
            locations=list(call.locations) if isinstance(call.locations, list) else [],
            raw_input=None if call.raw_input is UNSET else call.raw_input,
            raw_output=None if call.raw_output is UNSET else call.raw_output,
        )

    def _tool_call_update(self, update: acp.ToolCallUpdate) -> None:
        state = self.tool_calls.get(update.tool_call_id)
        if state is None:
            state = self.tool_calls[update.tool_call_id] = ToolCallState(update.tool_call_id)
        if isinstance(update.title, str):
            state.title = update.title
        if isinstance(update.kind, str):
            state.kind = update.kind
        if isinstance(update.status, str):
            state.status = update.status
        if update.content is not UNSET:
            state.content = list(update.content or [])
        if update.locations is not UNSET:
            state.locations = list(update.locations or [])
        if update.raw_input is not UNSET:
            state.raw_input = update.raw_input
        if update.raw_output is not UNSET:
            state.raw_output = update.raw_output

    # -- one handler per kind (the table in `_update_kinds.py`) -------------------------------

    def _plan(self, update: acp.Plan) -> None:
        self.plan = list(update.entries)

    def _available_commands(self, update: acp.AvailableCommandsUpdate) -> None:
        self.available_commands = list(update.available_commands)

    def _current_mode(self, update: acp.CurrentModeUpdate) -> None:
        self.current_mode_id = update.current_mode_id

    def _config_options(self, update: acp.ConfigOptionUpdate) -> None:
        self.config_options = list(update.config_options)

    def _session_info(self, update: acp.SessionInfoUpdate) -> None:
        # Omitted = unchanged, null = cleared.
        if update.title is not UNSET:
            self.title = update.title
        if update.updated_at is not UNSET:
            self.updated_at = update.updated_at

    def _usage(self, update: acp.UsageUpdate) -> None:
        self.usage = update

    def _notice(self, update: acp.Notice) -> None:
        self.notices = [*self.notices[-(MAX_NOTICES - 1) :], update]


def _present_fields(update: Any) -> dict[str, Any]:
    """The update's fields that are present, by their camelCase names (tag left out)."""
    raw: dict[str, Any] = msgspec.to_builtins(update)
    raw.pop("sessionUpdate", None)
    return raw


def _chunk_of(speaker: Speaker) -> Callable[[SessionState, Any], None]:
    def apply(state: SessionState, chunk: Any) -> None:
        state._chunk(speaker, chunk)

    return apply


_APPLY: UpdateDispatch[Callable[[SessionState, Any], None]] = UpdateDispatch(
    {
        **{
            tag: _chunk_of(kind.speaker)
            for tag, kind in UPDATE_KINDS.items()
            if kind.in_model and kind.speaker is not None
        },
        "tool_call": SessionState._tool_call,
        "tool_call_update": SessionState._tool_call_update,
        "plan": SessionState._plan,
        "available_commands_update": SessionState._available_commands,
        "current_mode_update": SessionState._current_mode,
        "config_option_update": SessionState._config_options,
        "session_info_update": SessionState._session_info,
        "usage_update": SessionState._usage,
        "notice": SessionState._notice,
        "compaction_update": SessionState._compaction,
        "compaction_summary_chunk": SessionState._compaction,
        "plan_update": SessionState._keep_unknown,  # the application reads it (on_update)
        "plan_removed": SessionState._keep_unknown,
        "subagent_update": SessionState._subagent,
        "session_message": SessionState._session_message,
        "session_message_chunk": SessionState._session_message_chunk,
    },
    unknown=SessionState._keep_unknown,
)
