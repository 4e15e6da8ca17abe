"""The kinds table and `UpdateDispatch`, now part of the event model (`acpstack.events`)."""

from __future__ import annotations

from acpstack.events._kinds import (
    MODEL_KINDS,
    UPDATE_KINDS,
    Speaker,
    UpdateDispatch,
    UpdateKind,
    model_kind,
    update_kind,
)

__all__ = [
    "MODEL_KINDS",
    "UPDATE_KINDS",
    "Speaker",
    "UpdateDispatch",
    "UpdateKind",
    "model_kind",
    "update_kind",
]
