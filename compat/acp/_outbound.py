"""The params of a call the layer sends, straight to acpstack's struct.

The official API builds the request's pydantic model from the method's arguments, which
validates them, then dumps it. The layer sends acpstack's struct, whose conversion checks
the same schema, so in the common case the model is not needed: the arguments (plain
values, and models the caller already built, hence checked) are serialized member by
member and converted to the struct once. Whatever this does not take for certain (a value
of another kind, a model of a class the field does not list, `_meta` members, a struct
conversion that fails) goes the plain way, through the model, which raises the pydantic
error the official SDK raises.
"""

from __future__ import annotations

import typing
from typing import Any

import msgspec
from pydantic import BaseModel as _PydanticModel

_PLAIN = (str, int, bool)


class _Unsure(Exception):
    """This value goes the plain way."""


class _Params:
    """Per request model: each field's JSON name and the model classes it accepts."""

    __slots__ = ("fields",)

    def __init__(self, model: Any) -> None:
        self.fields: dict[str, tuple[str, frozenset[type]]] = {
            name: (info.alias or name, frozenset(_models_in(info.annotation)))
            for name, info in model.__pydantic_fields__.items()
        }


def _models_in(annotation: Any) -> set[type]:
    """The model classes a value of `annotation` (or an item of it, for a list) may be."""
    if isinstance(annotation, type) and issubclass(annotation, _PydanticModel):
        return {annotation}
    found: set[type] = set()
    for arg in typing.get_args(annotation):
        found |= _models_in(arg)
    return found


_params: dict[Any, _Params] = {}


def _member(value: Any, models: frozenset[type]) -> Any:
    if value.__class__ in _PLAIN:
        return value
    if value.__class__ in models:  # built by its class, so checked
        return value.__pydantic_serializer__.to_python(
            value, mode="json", by_alias=True, exclude_none=True
        )
    if value.__class__ is list:
        return [_member(item, models) for item in value]
    raise _Unsure


def params_struct(model: Any, struct: Any, fields: dict[str, Any], extras: Any) -> Any:
    """The struct of `model(**fields, field_meta=extras)` as the layer sends it (None
    fields left out), or None when the model must be built (the plain way)."""
    if extras or struct is None:
        return None
    plan = _params.get(model)
    if plan is None:
        plan = _params[model] = _Params(model)
    members: dict[str, Any] = {}
    try:
        for name, value in fields.items():
            if value is None:
                continue
            alias, models = plan.fields[name]
            members[alias] = _member(value, models)
        return msgspec.convert(members, struct)
    except (_Unsure, KeyError, msgspec.ValidationError):
        return None


__all__ = ["params_struct"]
