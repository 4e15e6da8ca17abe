"""Every kind of `session/update` in one table, and the one way to dispatch on it.

The kind of an update is its `sessionUpdate` tag, the wire's own discriminator. The
table says which protocol version carries each kind (stable or unstable) and whose
message a chunk or a whole message belongs to. Every kind is an event type
(`acpstack.events`), the model both sides keep: the agent's store, the client's
`SessionState`, the chat's renderer.

A consumer gives one handler per kind to `UpdateDispatch`, which refuses a map that misses
a kind or names one that does not exist: a kind added to the table cannot be dropped
silently by one of them. Anything of no kind (an `UnknownEvent`, a custom or newer
variant kept whole) goes to the consumer's `unknown` handler. Nothing here imports a
schema module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

Speaker = Literal["user", "agent", "thought"]
Stability = Literal["stable", "unstable"]


@dataclass(frozen=True, slots=True)
class UpdateKind:
    """One `sessionUpdate` tag: in which protocol version (and how stable) it exists, and,
    for a chunk or a whole message, whose message it belongs to."""

    tag: str
    v1: Stability | None
    v2: Stability | None
    speaker: Speaker | None = None


UPDATE_KINDS: Mapping[str, UpdateKind] = {
    kind.tag: kind
    for kind in (
        UpdateKind("user_message_chunk", "stable", "stable", speaker="user"),
        UpdateKind("agent_message_chunk", "stable", "stable", speaker="agent"),
        UpdateKind("agent_thought_chunk", "stable", "stable", speaker="thought"),
        UpdateKind("tool_call", "stable", None),
        UpdateKind("tool_call_update", "stable", "stable"),
        UpdateKind("plan", "stable", None),
        UpdateKind("available_commands_update", "stable", "stable"),
        UpdateKind("current_mode_update", "stable", None),
        UpdateKind("config_option_update", "stable", "stable"),
        UpdateKind("session_info_update", "stable", "stable"),
        UpdateKind("usage_update", "stable", "stable"),
        UpdateKind("notice", "stable", "stable"),
        UpdateKind("compaction_update", "stable", "stable"),
        UpdateKind("compaction_summary_chunk", "stable", "stable"),
        UpdateKind("plan_update", "unstable", "stable"),
        UpdateKind("plan_removed", "unstable", "unstable"),
        UpdateKind("subagent_update", "unstable", "unstable"),
        UpdateKind("session_message", "unstable", "unstable"),
        UpdateKind("session_message_chunk", "unstable", "unstable"),
        # Protocol v2 only.
        UpdateKind("user_message", None, "stable", speaker="user"),
        UpdateKind("agent_message", None, "stable", speaker="agent"),
        UpdateKind("agent_thought", None, "stable", speaker="thought"),
        UpdateKind("state_update", None, "stable"),
        UpdateKind("tool_call_content_chunk", None, "stable"),
        UpdateKind("terminal_update", None, "stable"),
        UpdateKind("terminal_output_chunk", None, "stable"),
    )
}
"""Every `sessionUpdate` tag of the schema (v1 and v2, stable and unstable) and its entry."""
ALL_KINDS = frozenset(UPDATE_KINDS)
H = TypeVar("H")


class UpdateDispatch(Generic[H]):
    """A consumer's handler for each kind of `kinds` (all of them, see the module's doc),
    and `unknown` for anything else. `kind_of` names the kind of an update's type (None:
    no kind); by default the kinds are the event types' (all of the table)."""

    def __init__(
        self,
        handlers: Mapping[str, H],
        *,
        unknown: H,
        kinds: frozenset[str] = ALL_KINDS,
        kind_of: Callable[[type], str | None] | None = None,
    ) -> None:
        missing = sorted(kinds - handlers.keys())
        strange = sorted(handlers.keys() - kinds)
        if missing or strange:
            raise ValueError(f"update kinds without a handler {missing}, not kinds here {strange}")
        self._handlers = dict(handlers)
        self._unknown = unknown
        self._kind_of = kind_of or event_kind
        self._by_type: dict[type, H] = {}  # resolved once per type: the hot path is one lookup

    def handler(self, update: object) -> H:
        """The handler for `update`'s kind."""
        cls = type(update)
        found = self._by_type.get(cls)
        if found is None:
            kind = self._kind_of(cls)
            found = self._handlers[kind] if kind is not None else self._unknown
            self._by_type[cls] = found
        return found


def event_kind(cls: type) -> str | None:
    """The kind of the event type `cls`, None for anything else (an `UnknownEvent`)."""
    config = getattr(cls, "__struct_config__", None)
    if config is None or config.tag_field != "sessionUpdate" or cls.__module__ != _EVENTS:
        return None
    return config.tag if config.tag in ALL_KINDS else None


_EVENTS = "acpstack.events._types"

__all__ = [
    "ALL_KINDS",
    "UPDATE_KINDS",
    "Speaker",
    "Stability",
    "UpdateDispatch",
    "UpdateKind",
    "event_kind",
]
