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
- Unknown update kinds are kept in `unknown_updates`, not dropped.
- Protocol v2 (see `_v2_view.py`): `state` is the agent's foreground state (`idle`,
  `running`, `requires_action`, or a newer one: busy), `stop_reason` and `error` what the
  last idle reported; `agent_terminals` the agent's display terminals. A v1 agent's turn
  leaves `state` idle (ClientRuntime sets `stop_reason` when the prompt returns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from acpstack.schema import UnknownSessionUpdate
from acpstack.schema import v1 as acp

Speaker = Literal["user", "agent", "thought"]


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

_CHUNK_SPEAKERS: dict[type, Speaker] = {
    acp.UserMessageChunk: "user",
    acp.AgentMessageChunk: "agent",
    acp.AgentThoughtChunk: "thought",
}


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
        speaker = _CHUNK_SPEAKERS.get(type(update))
        if speaker is None and isinstance(update, acp.ContentChunk):  # an unstable subclass
            speaker = next(v for k, v in _CHUNK_SPEAKERS.items() if isinstance(update, k))
        if speaker is not None:
            assert isinstance(update, acp.ContentChunk)
            self._chunk(speaker, update)
        elif isinstance(update, acp.ToolCall):
            self._tool_call(update)
        elif isinstance(update, acp.ToolCallUpdate):
            self._tool_call_update(update)
        elif isinstance(update, acp.Plan):
            self.plan = list(update.entries)
        elif isinstance(update, acp.AvailableCommandsUpdate):
            self.available_commands = list(update.available_commands)
        elif isinstance(update, acp.CurrentModeUpdate):
            self.current_mode_id = update.current_mode_id
        elif isinstance(update, acp.ConfigOptionUpdate):
            self.config_options = list(update.config_options)
        elif isinstance(update, acp.SessionInfoUpdate):
            # Omitted = unchanged, null = cleared.
            if update.title is not UNSET:
                self.title = update.title
            if update.updated_at is not UNSET:
                self.updated_at = update.updated_at
        elif isinstance(update, acp.UsageUpdate):
            self.usage = update
        elif isinstance(update, acp.Notice):
            self.notices = [*self.notices[-(MAX_NOTICES - 1) :], update]
        elif isinstance(update, acp.CompactionUpdate | acp.CompactionSummaryChunk):
            self._compaction(update)
        elif isinstance(update, UnknownSessionUpdate):
            self.unknown_updates.append(update.data)
        elif not self._unstable(update):  # a variant newer than this model
            self.unknown_updates.append(msgspec.to_builtins(update))

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

    def _unstable(self, update: Any) -> bool:
        """Apply an update only unstable connections carry; False if it is none of them."""
        name = type(update).__name__
        if name not in ("SubagentUpdate", "SessionMessage", "SessionMessageChunk"):
            return False
        raw = msgspec.to_builtins(update)  # camelCase keys, exactly the fields present
        raw.pop("sessionUpdate", None)
        if name == "SubagentUpdate":
            child = self.subagents.setdefault(update.session_id, SubagentState(update.session_id))
            child.fields.update((k, v) for k, v in raw.items() if k != "sessionId")
            return True
        message = self.session_messages.get(update.message_id)
        if message is None:
            message = self.session_messages[update.message_id] = SessionMessageState(
                update.message_id
            )
        if name == "SessionMessageChunk":
            message.content.append(update.content)
        else:
            if "content" in raw:
                message.content = list(update.content or [])
            message.fields.update(
                (k, v) for k, v in raw.items() if k not in ("content", "messageId")
            )
        return True

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
