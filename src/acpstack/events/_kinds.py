"""Every kind of `session/update` in one table, and the one way to dispatch on it.

(Moved here from `acpstack.client._update_kinds`, which re-exports it: the table belongs
to the event model. `UpdateDispatch` still dispatches on the client's v1-shaped model
until `SessionState` keeps events.)

The kind of an update is its `sessionUpdate` tag, the wire's own discriminator. The
table says which protocol version carries each kind (stable or unstable) and whose
message a chunk adds to. The client's model of a session has the v1 shape (the types of
`acpstack.schema.v1` and `v1_unstable`; `_v2_view.py` maps a v2 update to them), so the
kinds a v1 connection carries are the ones a consumer of the model handles.

A consumer (`SessionState`, the chat's renderer, its child sessions) gives one handler per
model kind to `UpdateDispatch`, which refuses a map that misses a kind or names one that does
not exist: a kind added to the table cannot be dropped silently by one of them. An update
of no model kind (an `UnknownSessionUpdate`, a custom or newer variant kept whole) goes to
the consumer's `unknown` handler. Nothing here imports a schema module: the unstable and
v2 types still load only when a connection uses them.
"""

from __future__ import annotations

from collections.abc import Mapping
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

    @property
    def in_model(self) -> bool:
        """The client's (v1-shaped) model of a session carries it."""
        return self.v1 is not None


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
        # Protocol v2 only: `_v2_view.py` maps them to the model's kinds (or to the state).
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
#: The kinds of the client's model of a session: what every consumer handles.
MODEL_KINDS = frozenset(tag for tag, kind in UPDATE_KINDS.items() if kind.in_model)
_MODEL_MODULES = ("acpstack.schema._generated_v1", "acpstack.schema._generated_v1_unstable")


def model_kind(cls: type) -> str | None:
    """The kind of the model's update type `cls` (an unstable subclass has its stable
    parent's tag), None for anything else (an `UnknownSessionUpdate`, another version's type)."""
    config = getattr(cls, "__struct_config__", None)
    if (
        config is None
        or config.tag_field != "sessionUpdate"
        or cls.__module__ not in _MODEL_MODULES
    ):
        return None
    return config.tag if config.tag in MODEL_KINDS else None


H = TypeVar("H")


class UpdateDispatch(Generic[H]):
    """A consumer's handler for each model kind (all of them, see the module's doc), and
    `unknown` for an update of no model kind."""

    def __init__(self, handlers: Mapping[str, H], *, unknown: H) -> None:
        missing = sorted(MODEL_KINDS - handlers.keys())
        strange = sorted(handlers.keys() - MODEL_KINDS)
        if missing or strange:
            raise ValueError(f"update kinds without a handler {missing}, not model kinds {strange}")
        self._handlers = dict(handlers)
        self._unknown = unknown
        self._by_type: dict[type, H] = {}  # resolved once per type: the hot path is one lookup

    def handler(self, update: object) -> H:
        """The handler for `update`'s kind."""
        cls = type(update)
        found = self._by_type.get(cls)
        if found is None:
            kind = model_kind(cls)
            found = self._handlers[kind] if kind is not None else self._unknown
            self._by_type[cls] = found
        return found


def update_kind(update: object) -> str | None:
    """The model kind of `update`, None when it has none (see `model_kind`)."""
    return model_kind(type(update))


__all__ = [
    "MODEL_KINDS",
    "UPDATE_KINDS",
    "UpdateDispatch",
    "Speaker",
    "UpdateKind",
    "update_kind",
    "model_kind",
]
