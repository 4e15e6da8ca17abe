"""The slow path of decoding: honour the schema's leniency markers.

Decoding first tries msgspec's strict typed decode (the fast path). Only when that fails
does this module repair the plain JSON value as the schema allows and try again:

- a field marked `x-deserialize-default-on-error` whose value is invalid is dropped, so it
  reads as absent (its default);
- a field marked `x-deserialize-default-on-null` that is `null` reads as its type's empty
  value (`[]` or `{}`), as the official SDKs decode it;
- an array marked `x-deserialize-skip-invalid-items` loses just its invalid items;
- a `session/update` whose variant is unknown becomes `UnknownSessionUpdate`.

Everything else still fails with the original validation error.
"""

from __future__ import annotations

import sys
import types
import typing
from functools import cache
from typing import Any, Union, get_args, get_origin

import msgspec
from msgspec import Struct
from msgspec.structs import fields as struct_fields

from acpstack.schema._base import UnknownSessionUpdate, coerce_union, convert

_UNION_TYPES = (Union, types.UnionType)
_STRICT = (False, False, False)  # no leniency marker on the field


def _strip(tp: Any) -> Any:
    """Remove Annotated and the None/UNSET arms that do not change how a value decodes."""
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in _UNION_TYPES:
        arms = [a for a in get_args(tp) if a not in (type(None), msgspec.UnsetType)]
        if len(arms) == 1:
            return _strip(arms[0])
    return tp


@cache
def _fields(cls: type[Struct]) -> tuple[tuple[str, str, Any], ...]:
    return tuple((f.name, f.encode_name, f.type) for f in struct_fields(cls))


def _custom_union(cls: type[Struct], attr: str) -> tuple[Any, Any] | None:
    spec = getattr(cls, "__acp_unions__", {}).get(attr)
    if spec is None:
        return None
    module = sys.modules[cls.__module__]
    return module._CUSTOM_UNIONS[spec[0]], spec[1]


def _valid(value: Any, tp: Any, union: tuple[Any, Any] | None) -> bool:
    try:
        if union is not None:
            coerce_union(value, union[0], many=union[1])
        else:
            convert(value, tp)
    except (msgspec.ValidationError, ValueError, TypeError):
        return False
    return True


def _tagged_member(tp: Any, value: dict[str, Any]) -> Any:
    for arm in get_args(tp):
        config = getattr(arm, "__struct_config__", None)
        if (
            config is not None
            and config.tag_field is not None
            and value.get(config.tag_field) == config.tag
        ):
            return arm
    return None


def _repair(value: Any, tp: Any) -> Any:
    tp = _strip(tp)
    origin = get_origin(tp)
    if origin in _UNION_TYPES:
        if isinstance(value, dict):
            arm = _tagged_member(tp, value)
            if arm is not None:
                return _repair(value, arm)
        return value
    if origin is list and isinstance(value, list):
        (item_tp,) = get_args(tp)
        return [_repair(item, item_tp) for item in value]
    if origin is dict and isinstance(value, dict):
        _, item_tp = get_args(tp)
        return {key: _repair(item, item_tp) for key, item in value.items()}
    if isinstance(tp, type) and issubclass(tp, Struct) and isinstance(value, dict):
        return _repair_struct(value, tp)
    return value


def _repair_struct(value: dict[str, Any], cls: type[Struct]) -> dict[str, Any]:
    lenient: dict[str, tuple[bool, bool, bool]] = getattr(cls, "__acp_lenient__", {})
    out = dict(value)
    for attr, key, tp in _fields(cls):
        if key not in out:
            continue
        current = out[key]
        default_on_error, skip_invalid, default_on_null = lenient.get(attr, _STRICT)
        if current is None and default_on_null:
            out[key] = {} if get_origin(_strip(tp)) is dict else []
            continue
        union = _custom_union(cls, attr)
        if _valid(current, tp, union):
            continue
        if skip_invalid and isinstance(current, list):
            item_tp = get_args(_strip(tp))[0] if get_origin(_strip(tp)) is list else Any
            item_union = (union[0], False) if union is not None else None
            kept = []
            for item in current:
                fixed = _repair(item, item_tp) if union is None else item
                if _valid(fixed, item_tp, item_union):
                    kept.append(fixed)
            out[key] = kept
            continue
        fixed = _repair(current, tp) if union is None else _repair_member(current, union)
        if _valid(fixed, tp, union):
            out[key] = fixed
        elif default_on_error:
            del out[key]
    return out


def _repair_member(value: Any, union: tuple[Any, Any]) -> Any:
    """A custom-union value repaired as the variant its tag selects (nested unions, such
    as v2's state updates, through their inner tag); lists and maps item by item."""
    spec, many = union
    if many == "list" and isinstance(value, list):
        return [_repair_member(item, (spec, False)) for item in value]
    if many == "map" and isinstance(value, dict):
        return {k: _repair_member(item, (spec, False)) for k, item in value.items()}
    tag_field, tagged = spec[0], spec[1]
    while (
        isinstance(value, dict) and tag_field is not None and isinstance(value.get(tag_field), str)
    ):
        member = tagged.get(value[tag_field])
        if isinstance(member, tuple):  # a variant that is itself a tagged union
            tag_field, tagged = member[0], member[1]
            continue
        return _repair(value, member) if member is not None else value
    if isinstance(value, dict) and (tag_field is None or tag_field not in value):
        # No tag: the union's untagged arms (e.g. a stdio MCP server, which has no "type").
        for arm in spec[2]:
            fixed = _repair(value, arm)
            if _valid(fixed, arm, None):
                return fixed
    return value


def lenient_convert(value: Any, cls: type[Struct]) -> Any:
    """Convert a plain JSON value to `cls`, applying the schema's leniency markers."""
    unknown = _unknown_session_update(value, cls)
    if unknown is not None:
        # Decode the rest of the notification normally, then attach the unknown variant.
        value = dict(
            value,
            update={
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": ""},
            },
        )
    result = convert(_repair(value, cls), cls)
    if unknown is not None:
        result.update = unknown
    return result


def _unknown_session_update(value: Any, cls: type[Struct]) -> UnknownSessionUpdate | None:
    if cls.__name__ != "SessionNotification" or not isinstance(value, dict):
        return None
    update = value.get("update")
    if not isinstance(update, dict) or not isinstance(update.get("sessionUpdate"), str):
        return None
    update_tp = next(tp for attr, _, tp in _fields(cls) if attr == "update")
    if _tagged_member(_strip(update_tp), update) is not None:
        return None
    return UnknownSessionUpdate(session_update=update["sessionUpdate"], data=update)
