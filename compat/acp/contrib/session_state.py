"""`SessionAccumulator`: fold a session's `session/update` notifications into one snapshot
(for a client's view: messages, tool calls, plan, mode, commands)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp import _generated_schema as s

__all__ = ["SessionAccumulator", "SessionSnapshot", "ToolCallView"]

_TOOL_FIELDS = ("title", "kind", "status", "content", "locations", "raw_input", "raw_output")


@dataclass(frozen=True)
class ToolCallView:
    tool_call_id: str
    title: str | None = None
    kind: Any = None
    status: Any = None
    content: tuple[Any, ...] | None = None
    locations: tuple[Any, ...] | None = None
    raw_input: Any = None
    raw_output: Any = None


@dataclass(frozen=True)
class SessionSnapshot:
    session_id: str | None
    tool_calls: dict[str, ToolCallView]
    plan_entries: tuple[Any, ...]
    current_mode_id: str | None
    available_commands: tuple[Any, ...]
    user_messages: tuple[Any, ...]
    agent_messages: tuple[Any, ...]
    agent_thoughts: tuple[Any, ...]


@dataclass
class _State:
    session_id: str | None = None
    tool_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    plan_entries: list[Any] = field(default_factory=list)
    current_mode_id: str | None = None
    available_commands: list[Any] = field(default_factory=list)
    user_messages: list[Any] = field(default_factory=list)
    agent_messages: list[Any] = field(default_factory=list)
    agent_thoughts: list[Any] = field(default_factory=list)


class SessionAccumulator:
    """Apply notifications with `apply`; read the state with `snapshot`.

    A notification for another session starts over (or raises ValueError when
    `auto_reset_on_session_change` is False)."""

    def __init__(self, *, auto_reset_on_session_change: bool = True) -> None:
        self.auto_reset = auto_reset_on_session_change
        self._state = _State()
        self._listeners: list[Callable[[SessionSnapshot, s.SessionNotification], None]] = []

    def reset(self) -> None:
        self._state = _State()

    def subscribe(
        self, callback: Callable[[SessionSnapshot, s.SessionNotification], None]
    ) -> Callable[[], None]:
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def apply(self, notification: s.SessionNotification) -> SessionSnapshot:
        state = self._state
        if state.session_id not in (None, notification.session_id):
            if not self.auto_reset:
                raise ValueError(
                    f"notification for session {notification.session_id!r}, "
                    f"accumulating {state.session_id!r}"
                )
            self.reset()
            state = self._state
        state.session_id = notification.session_id
        update = notification.update
        if isinstance(update, s.ToolCallStart):
            state.tool_calls[update.tool_call_id] = {
                k: getattr(update, k, None) for k in _TOOL_FIELDS
            }
        elif isinstance(update, s.ToolCallProgress):
            known = state.tool_calls.setdefault(update.tool_call_id, {})
            known.update(
                {
                    k: getattr(update, k)
                    for k in _TOOL_FIELDS
                    if getattr(update, k, None) is not None
                }
            )
        elif isinstance(update, s.AgentPlanUpdate):
            state.plan_entries = list(update.entries)
        elif isinstance(update, s.CurrentModeUpdate):
            state.current_mode_id = update.current_mode_id
        elif isinstance(update, s.AvailableCommandsUpdate):
            state.available_commands = list(update.available_commands)
        elif isinstance(update, s.UserMessageChunk):
            state.user_messages.append(update)
        elif isinstance(update, s.AgentMessageChunk):
            state.agent_messages.append(update)
        elif isinstance(update, s.AgentThoughtChunk):
            state.agent_thoughts.append(update)
        snapshot = self.snapshot()
        for listener in list(self._listeners):
            listener(snapshot, notification)
        return snapshot

    def snapshot(self) -> SessionSnapshot:
        state = self._state
        calls = {
            cid: ToolCallView(
                cid,
                **{
                    k: tuple(v) if k in ("content", "locations") and v is not None else v
                    for k, v in values.items()
                },
            )
            for cid, values in state.tool_calls.items()
        }
        return SessionSnapshot(
            state.session_id,
            calls,
            tuple(state.plan_entries),
            state.current_mode_id,
            tuple(state.available_commands),
            tuple(state.user_messages),
            tuple(state.agent_messages),
            tuple(state.agent_thoughts),
        )
