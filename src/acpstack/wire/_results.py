"""Checking what our own handlers answer before it goes on the wire.

A handler's answer must be its method's result type. For an answer of that exact type, the
type checker vouched for its fields where it was built; what slips through is a plain
string in a closed-set field (a `Literal` such as `stopReason`, filled from a variable):
those fields are checked, one attribute read and one set lookup each. Anything else (a dict, another type, None) is converted to the
result type with msgspec, which names the first bad field; when it fits, it is sent as it
was (with any field the result type does not know).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import inspect

from acpstack.schema import MethodSpec, convert


class InvalidResult(ValueError):
    """A handler answered its method with a value the method's result type refuses."""

    def __init__(self, spec: MethodSpec, detail: str) -> None:
        super().__init__(f"the `{spec.handler}` handler of {spec.name} returned {detail}")
        self.spec: MethodSpec = spec
        self.detail: str = detail


# Per result type: (attribute, wire name, allowed values) of its top-level Literal fields.
_closed_fields: dict[type, tuple[tuple[str, str, frozenset[Any]], ...]] = {}


def checked_result(spec: MethodSpec | None, result: Any) -> Any:
    """`result` ready to send as the answer of `spec`'s method; InvalidResult when it is not
    one. Methods without a result type (extensions) pass as they are."""
    if spec is None or spec.result is None:
        return result
    kind = spec.result
    if type(result) is kind:
        fields = _closed_fields.get(kind)
        if fields is None:
            fields = _closed_fields[kind] = _literal_fields(kind)
        for attr, wire_name, allowed in fields:
            value = getattr(result, attr)
            if value not in allowed:
                raise InvalidResult(spec, f"{value!r} for `{wire_name}` (one of {_list(allowed)})")
        return result
    if result is None:
        # An empty answer ({} on the wire) may be written as None by a handler.
        try:
            msgspec.convert({}, kind)
        except (msgspec.ValidationError, TypeError):
            raise InvalidResult(spec, f"nothing (a {kind.__name__} is required)") from None
        return result
    source = msgspec.to_builtins(result) if isinstance(result, msgspec.Struct) else result
    try:
        convert(source, kind)  # (an open union's unknown variant is kept)
    except msgspec.ValidationError as exc:
        got = type(result).__name__
        raise InvalidResult(spec, f"an invalid {kind.__name__} (a {got}): {exc}") from None
    except TypeError as exc:  # not a type msgspec can read at all
        raise InvalidResult(spec, f"a {type(result).__name__}: {exc}") from None
    return result  # as it was: fields the result type does not know are kept


def _literal_fields(kind: type) -> tuple[tuple[str, str, frozenset[Any]], ...]:
    info = inspect.type_info(kind)
    if not isinstance(info, inspect.StructType):
        return ()
    found = []
    for field in info.fields:
        allowed = _allowed_values(field.type)
        if allowed is not None:
            if not field.required:  # an optional field may stay unset
                allowed |= {msgspec.UNSET}
            found.append((field.name, field.encode_name, allowed))
    return tuple(found)


def _allowed_values(field_type: inspect.Type) -> frozenset[Any] | None:
    """The values a Literal field (or a Literal that may be unset or null) may hold."""
    if isinstance(field_type, inspect.LiteralType):
        return frozenset(field_type.values)
    if isinstance(field_type, inspect.UnionType):
        values: set[Any] = set()
        for member in field_type.types:
            if isinstance(member, inspect.LiteralType):
                values.update(member.values)
            elif isinstance(member, inspect.NoneType):
                values.add(None)
            else:
                return None  # an open union: the encoder takes any of its members
        return frozenset(values) if values else None
    return None


def _list(allowed: frozenset[Any]) -> str:
    return ", ".join(sorted(repr(v) for v in allowed if isinstance(v, str)))
