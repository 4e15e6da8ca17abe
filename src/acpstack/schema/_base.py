"""Hand-written support for the generated wire types."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, Struct


class AcpStruct(Struct, kw_only=True, repr_omit_defaults=True):
    """Base of every generated wire type. Absent fields are `UNSET`, distinct from `None`."""


class UnknownSessionUpdate(AcpStruct):
    """A `session/update` variant this library does not know (custom or newer).

    Kept instead of dropped, so a client can show or forward it.
    """

    session_update: str
    data: dict[str, Any]

    @classmethod
    def of(cls, data: dict[str, Any]) -> UnknownSessionUpdate:
        """The unknown variant `data` (its JSON object) as received."""
        return cls(session_update=str(data.get("sessionUpdate", "")), data=data)


def _convert(value: Any, tp: Any) -> Any:
    return msgspec.convert(value, tp)


# A custom union: (tag field, tag -> variant type or nested spec, untagged arms tried in
# order, what to do with an unknown variant: False = fail, True = keep the plain dict, or a
# class with `of(dict)` such as UnknownSessionUpdate).
UnionSpec = tuple[str | None, dict[str, Any], tuple[Any, ...], Any]


def _coerce_one(value: Any, spec: UnionSpec) -> Any:
    if type(value) is dict:  # decoded JSON whose tag names a known variant: most of them
        tag = value.get(spec[0]) if spec[0] is not None else None
        target = spec[1].get(tag) if type(tag) is str else None
        if target is not None and type(target) is not tuple:
            return msgspec.convert(value, target)
    elif isinstance(value, Struct):
        return value  # built in code with its variant
    return _coerce_general(value, spec)


def _coerce_general(value: Any, spec: UnionSpec) -> Any:
    tag_field, tagged, ordered, keep_unknown = spec
    if value is None or value is UNSET:
        return value
    if isinstance(value, Struct):
        return value
    if isinstance(value, dict) and tag_field is not None and tag_field in value:
        tag = value[tag_field]
        if isinstance(tag, str) and tag in tagged:
            target = tagged[tag]
            if isinstance(target, tuple):  # the variant is itself a tagged union (v2 state)
                return _coerce_one(value, target)
            return _convert(value, target)
        if keep_unknown:
            return _kept(value, keep_unknown)
    errors = []
    for tp in ordered:
        try:
            converted = _convert(value, tp)
        except msgspec.ValidationError as exc:
            errors.append(str(exc))
            continue
        if Any in ordered and _loses_keys(value, converted):
            continue  # a union open to any value keeps what a narrower arm would drop
        return converted
    if keep_unknown and isinstance(value, dict):
        return _kept(value, keep_unknown)
    raise ValueError("matches no variant: " + "; ".join(errors))


def _loses_keys(value: Any, converted: Any) -> bool:
    """Whether `converted` (an arm's Struct) left out members of the JSON object `value`,
    e.g. error data `{"reason": ..., "sessionId": ...}` read as v2's "session not found"
    data, which has only `sessionId`."""
    if not isinstance(value, dict) or not isinstance(converted, Struct):
        return False
    names = {f.encode_name for f in msgspec.structs.fields(converted)}
    return not names.issuperset(value)


def _kept(value: dict[str, Any], keep_unknown: Any) -> Any:
    return value if keep_unknown is True else keep_unknown.of(value)


def coerce_union(
    value: Any,
    spec: UnionSpec,
    *,
    many: Literal[False, "list", "map"],
) -> Any:
    """Turn the plain JSON value of a custom-union field into its variant Struct(s)."""
    if not many or value is None or value is UNSET:
        return _coerce_one(value, spec)
    if many == "list":
        return [_coerce_one(item, spec) for item in value]
    return {key: _coerce_one(item, spec) for key, item in value.items()}


# Per struct class: its custom-union fields as (name, tag field, tag -> variant, spec,
# many), made once. A class always gets the same `unions` (those of the module whose
# __post_init__ it runs).
_Plan = tuple[tuple[str, str | None, dict[str, Any], UnionSpec, Any], ...]
_plans: dict[type, _Plan] = {}


def _plan(cls: type, unions: dict[str, Any]) -> _Plan:
    specs: dict[str, tuple[str, Any]] = getattr(cls, "__acp_unions__")  # noqa: B009 (a generated ClassVar)
    plan = tuple(
        (name, unions[union][0], unions[union][1], unions[union], many)
        for name, (union, many) in specs.items()
    )
    _plans[cls] = plan
    return plan


def coerce_fields(obj: Struct, unions: dict[str, Any]) -> None:
    """Convert every custom-union field of a freshly built struct (see `__acp_unions__`)."""
    plan = _plans.get(type(obj))
    if plan is None:
        plan = _plan(type(obj), unions)
    # Inline fast paths (this runs for every decoded or built struct that has such a field):
    # a JSON object whose tag names a plain variant, and a value already typed or absent.
    for name, tag_field, tagged, spec, many in plan:
        value = getattr(obj, name)
        if type(value) is dict and not many:
            tag = value.get(tag_field) if tag_field is not None else None
            target = tagged.get(tag) if type(tag) is str else None
            if type(target) is tuple:  # a variant that is itself a tagged union (v2 state)
                inner = value.get(target[0]) if target[0] is not None else None
                target = target[1].get(inner) if type(inner) is str else None
            if target is not None and type(target) is not tuple:
                setattr(obj, name, msgspec.convert(value, target))
                continue
        elif isinstance(value, Struct) or value is None or value is UNSET:
            continue
        converted = coerce_union(value, spec, many=many)
        if converted is not value:
            setattr(obj, name, converted)


def check_arms(obj: Struct) -> None:
    """A flattened union (e.g. SetSessionConfigOptionRequest) must match one of its arms."""
    arms: list[tuple[list[str], dict[str, Any]]] = getattr(obj, "__acp_arms__")  # noqa: B009
    encoded = msgspec.to_builtins(obj)
    for required, consts in arms:
        if all(name in encoded for name in required) and all(
            encoded.get(k) == v for k, v in consts.items()
        ):
            return
    raise ValueError(f"{type(obj).__name__} matches none of its variants")


class MethodSpec(Struct, frozen=True):
    """One row of the generated method table."""

    name: str
    handler: str
    handled_by: Literal["agent", "client", "both", "protocol"]
    kind: Literal["request", "notification"]
    params: type
    result: type | None
    gate: tuple[str, ...] | None
    unstable: bool
