"""The kinds of the client's model of a session, and the dispatch on them.

The kinds table and the dispatch live in the event model (`acpstack.events`). The
client's model still has the v1 shape (the types of `acpstack.schema.v1` and
`v1_unstable`; `_v2_view.py` maps a v2 update to them), so its consumers (`SessionState`,
the chat's renderer, its child sessions) dispatch on the kinds a v1 connection carries,
by the model's types. An update of no model kind (an `UnknownSessionUpdate`, a custom or
newer variant kept whole) goes to the consumer's `unknown` handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from acpstack.events import UPDATE_KINDS, Speaker, UpdateKind
from acpstack.events import UpdateDispatch as EventDispatch

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


class UpdateDispatch(EventDispatch[H]):
    """A consumer's handler for each model kind (all of them), and `unknown` for an update
    of no model kind."""

    def __init__(self, handlers: Mapping[str, H], *, unknown: H) -> None:
        super().__init__(handlers, unknown=unknown, kinds=MODEL_KINDS, kind_of=model_kind)


def update_kind(update: object) -> str | None:
    """The model kind of `update`, None when it has none (see `model_kind`)."""
    return model_kind(type(update))


__all__ = [
    "MODEL_KINDS",
    "UPDATE_KINDS",
    "Speaker",
    "UpdateDispatch",
    "UpdateKind",
    "model_kind",
    "update_kind",
]
