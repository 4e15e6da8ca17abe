"""Hand-written support for the generated wire types."""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

import msgspec
from msgspec import UNSET, Struct
from msgspec.structs import fields as struct_fields


class AcpStruct(Struct, kw_only=True, repr_omit_defaults=True, gc=False):
    """Base of every generated wire type. Absent fields are `UNSET`, distinct from `None`.

    Not tracked by the cyclic garbage collector (`gc=False`): a wire value is a tree of
    JSON values, which reference counting frees, and a stream of tracked updates made
    collections a sixth of a client's CPU. A cycle made only through these types (one
    assigned into its own field) is never freed: do not build one."""


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
    return convert(value, tp)


# A custom union: (tag field, tag -> variant type or nested spec, untagged arms tried in
# order, what to do with an unknown variant: False = fail, True = keep the plain dict, or a
# class with `of(dict)` such as UnknownSessionUpdate).
UnionSpec = tuple[str | None, dict[str, Any], tuple[Any, ...], Any]


def _coerce_one(value: Any, spec: UnionSpec) -> Any:
    if type(value) is dict:  # decoded JSON whose tag names a known variant: most of them
        tag = value.get(spec[0]) if spec[0] is not None else None
        target = spec[1].get(tag) if type(tag) is str else None
        if target is not None and type(target) is not tuple:
            return convert(value, target)
    elif isinstance(value, Struct):
        carried = _carriers.get(type(value))
        return value if carried is None else _unpack(value, carried)  # else: typed already
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
                setattr(obj, name, convert(value, target))
                continue
        elif isinstance(value, Struct) or value is None or value is UNSET:
            carried = _carriers.get(type(value))
            if carried is not None:
                setattr(obj, name, _unpack(value, carried))
            continue
        converted = coerce_union(value, spec, many=many)
        if converted is not value:
            setattr(obj, name, converted)


# -- open unions decoded natively -------------------------------------------------------
#
# An open union (its unknown variants are kept) whose known variants are all tagged on one
# field is, at runtime, msgspec's own tagged union of those variants (`open_union`): a
# known variant decodes in msgspec's one pass, with no plain dict in between. What that
# union cannot hold (an unknown variant, kept as its dict or `UnknownSessionUpdate`; a
# variant that is itself a tagged union, such as v2's `state_update`) fails msgspec's
# decode; `convert` then sets each such value aside, converts the rest with a stand-in
# in its place, and puts the value back where the stand-in is.
#
# A variant that is itself a tagged union (`state_update`, tagged again by `state`) is in
# the native union as a carrier: a private struct with the outer tag, the known inner tags
# and every field of the inner variants as plain JSON. The struct holding the union turns
# it into the inner variant (`_unpack`, from its __post_init__), so a state update is read
# in one pass too; an unknown inner tag fails the native decode and is kept as above.

_UNION_TYPES = (Union, types.UnionType)
_NOTHING = (type(None), msgspec.UnsetType)
_open_unions: dict[Any, UnionSpec] = {}  # runtime type (a Union of variants) -> its spec
_stand_ins: dict[int, Any] = {}  # id(spec) -> a JSON value the runtime type accepts
# carrier class -> (its fields as (attribute, JSON name), outer tag field and tag, inner spec)
_Carried = tuple[tuple[tuple[str, str], ...], str, str, UnionSpec]
_carriers: dict[type, _Carried] = {}


def open_union(spec: UnionSpec) -> Any:
    """The runtime type of the open union `spec`: msgspec's tagged union of its plain
    variants (each tagged on the spec's tag field), kept for `convert` to find."""
    tag_field, tagged = spec[0], spec[1]
    arms = tuple(t for t in tagged.values() if type(t) is not tuple)
    for arm in arms:
        if arm.__struct_config__.tag_field != tag_field:
            raise TypeError(f"{arm.__name__} is not tagged on {tag_field!r}")
    assert tag_field is not None
    arms += tuple(_carrier(tag_field, t, n) for t, n in tagged.items() if type(n) is tuple)
    union: Any = Union[tuple(arms)]  # noqa: UP007 (a runtime union of classes)
    known = _open_unions.setdefault(union, spec)
    if known != spec:
        raise TypeError(f"two open unions of the same variants: {union}")
    return union


def _carrier(outer_field: str, outer_tag: str, inner: UnionSpec) -> type:
    """The carrier of the nested variant `outer_tag` (see above)."""
    inner_field, variants = inner[0], inner[1]
    if inner_field is None or any(type(v) is tuple for v in variants.values()):
        raise TypeError(f"{outer_tag}: a nested union is tagged, one level deep")
    names: dict[str, str] = {}
    for variant in variants.values():
        for f in struct_fields(variant):
            if f.encode_name not in (outer_field, inner_field):
                names.setdefault(f.name, f.encode_name)
    tags = tuple(variants)
    carrier = msgspec.defstruct(
        f"_Carrier_{outer_tag}",
        [("inner_tag", Literal[tags]), *((n, Any, UNSET) for n in names)],
        tag_field=outer_field,
        tag=outer_tag,
        rename={"inner_tag": inner_field, **names},
        kw_only=True,
        module=__name__,
    )
    _carriers[carrier] = (tuple(names.items()), outer_field, outer_tag, inner)
    return carrier


def _unpack(carrier: Any, carried: _Carried) -> Any:
    """The inner variant a carrier holds, converted (and checked) as that variant."""
    names, outer_field, outer_tag, inner = carried
    data = {outer_field: outer_tag, inner[0]: carrier.inner_tag}
    for attr, key in names:
        value = getattr(carrier, attr)
        if value is not UNSET:
            data[key] = value
    return convert(data, inner[1][carrier.inner_tag])


def convert(value: Any, tp: Any) -> Any:
    """`msgspec.convert(value, tp)` that keeps what the schema keeps: an unknown variant of
    an open union (a v2 content block as its dict, a `session/update` as
    `UnknownSessionUpdate`) and v2's nested `state_update` variants. Bare msgspec decodes
    the known variants of v2's open unions only (as it does v1's closed ones): decode JSON
    of v2 types with `msgspec.json.decode(data)` and then this."""
    try:
        result = msgspec.convert(value, tp)
        carried = _carriers.get(type(result))
        return result if carried is None else _unpack(result, carried)  # (tp: the union)
    except msgspec.ValidationError:
        if not _open_unions:
            raise
        patches: list[tuple[tuple[Any, ...], Any]] = []
        stood_in = _aside(value, tp, patches, ())
        if not patches:
            raise  # nothing set aside: the value is invalid
    result = msgspec.convert(stood_in, tp)
    for path, kept in patches:
        result = _put(result, path, kept)
    return result


def _strip(tp: Any) -> Any:
    """`tp` without Annotated and without its None and UNSET arms."""
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in _UNION_TYPES:
        arms = tuple(a for a in get_args(tp) if a not in _NOTHING)
        if len(arms) == 1:
            return _strip(arms[0])
        if len(arms) < len(get_args(tp)):
            return Union[tuple(arms)]  # noqa: UP007
    return tp


@cache
def _struct_fields(cls: type[Struct]) -> tuple[tuple[str, str, Any, bool], ...]:
    return tuple((f.name, f.encode_name, f.type, f.required) for f in struct_fields(cls))


def _aside(value: Any, tp: Any, patches: list[tuple[tuple[Any, ...], Any]], path: Any) -> Any:
    """`value` with a stand-in for each value an open union's runtime type cannot hold;
    `patches` gets (where, the value converted as its spec says)."""
    tp = _strip(tp)
    spec = _open_unions.get(tp)
    if spec is not None:
        if type(value) is not dict:
            return value  # msgspec reports it
        tag = value.get(spec[0])
        target = spec[1].get(tag) if type(tag) is str else None
        if target is not None and type(target) is not tuple:
            return _aside(value, target, patches, path)
        patches.append((path, _coerce_general(value, spec)))
        return _stand_in(spec)
    origin = get_origin(tp)
    if origin is list and type(value) is list:
        (item_tp,) = get_args(tp)
        return [_aside(v, item_tp, patches, (*path, (1, i))) for i, v in enumerate(value)]
    if origin is dict and type(value) is dict:
        item_tp = get_args(tp)[1]
        return {k: _aside(v, item_tp, patches, (*path, (1, k))) for k, v in value.items()}
    if type(value) is not dict:
        return value
    if origin in _UNION_TYPES:
        arm = _tagged_arm(tp, value)
        return value if arm is None else _aside(value, arm, patches, path)
    if isinstance(tp, type) and issubclass(tp, Struct):
        out = value
        for attr, key, field_tp, _ in _struct_fields(tp):
            if key in value:
                item = value[key]
                got = _aside(item, field_tp, patches, (*path, (0, attr)))
                if got is not item:
                    out = dict(out) if out is value else out
                    out[key] = got
        return out
    return value


def _tagged_arm(tp: Any, value: dict[str, Any]) -> Any:
    """The arm of a tagged union of Structs that `value`'s tag names (or its only Struct)."""
    structs = [a for a in get_args(tp) if isinstance(a, type) and issubclass(a, Struct)]
    for arm in structs:
        config = arm.__struct_config__
        if config.tag_field is not None and value.get(config.tag_field) == config.tag:
            return arm
    return structs[0] if len(structs) == 1 else None


def _put(target: Any, path: tuple[Any, ...], kept: Any) -> Any:
    """`target` with `kept` at `path` (attribute steps (0, name), item steps (1, key))."""
    if not path:
        return kept
    holder = target
    for kind, key in path[:-1]:
        holder = getattr(holder, key) if kind == 0 else holder[key]
    kind, key = path[-1]
    if kind == 0:
        setattr(holder, key, kept)
    else:
        holder[key] = kept
    return target


def _stand_in(spec: UnionSpec) -> Any:
    """A JSON value of one of the spec's plain variants, the least it can be."""
    found = _stand_ins.get(id(spec))
    if found is None:
        for arm in spec[1].values():
            if type(arm) is tuple:
                continue
            try:
                candidate = _least(arm)
                msgspec.convert(candidate, arm)
            except (msgspec.ValidationError, TypeError, ValueError):
                continue
            found = _stand_ins[id(spec)] = candidate
            break
        else:
            raise TypeError(f"no stand-in for the open union of {spec[0]!r}")
    return found


def _least(tp: Any) -> Any:
    """The smallest JSON value of `tp` (required fields only, empty strings and lists)."""
    if get_origin(tp) in _UNION_TYPES and type(None) in get_args(tp):
        return None
    tp = _strip(tp)
    if tp in _open_unions:
        return _stand_in(_open_unions[tp])
    origin = get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, Struct):
        config = tp.__struct_config__
        out: dict[str, Any] = {}
        if config.tag_field is not None:
            out[config.tag_field] = config.tag
        for _, key, field_tp, required in _struct_fields(tp):
            if required:
                out[key] = _least(field_tp)
        return out
    if origin is Literal:
        return get_args(tp)[0]
    if origin in _UNION_TYPES:
        return _least(get_args(tp)[0])
    simple = {list: [], dict: {}, str: "", int: 0, float: 0.0, bool: False}
    return simple.get(origin or tp)


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
