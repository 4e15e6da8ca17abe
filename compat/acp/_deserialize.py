"""Lenient decoding of the schema's marked fields, as the official SDK does it.

The schema marks fields `x-deserialize-default-on-error` (a malformed value becomes the
field's default instead of failing the whole message) and arrays
`x-deserialize-skip-invalid-items` (items that do not validate are dropped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

__all__ = [
    "default_on_error",
    "not_one_of",
    "salvage_on_error",
    "skip_invalid",
    "skip_invalid_items",
]


def salvage_on_error(value: Any, handler: Callable[[Any], Any], default: Callable[[], Any]) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return default()


def skip_invalid_items(value: Any, handler: Callable[[Any], Any]) -> Any:
    if not isinstance(value, list):
        return handler(value)
    kept = []
    for item in value:
        try:
            kept.append(handler([item])[0])
        except ValidationError:
            continue
    return kept


def default_on_error(value: Any, handler: Callable[[Any], Any]) -> Any:
    """For `WrapValidator`: a malformed value becomes None."""
    return salvage_on_error(value, handler, lambda: None)


def skip_invalid(value: Any, handler: Callable[[Any], Any]) -> Any:
    """For `WrapValidator`: drop the array items that do not validate."""
    return skip_invalid_items(value, handler)


def not_one_of(*known: Any) -> Callable[[Any], Any]:
    """For `AfterValidator` on a catch-all variant's tag: a known tag belongs to its own
    variant, so a malformed known variant fails instead of passing as the catch-all."""

    def check(value: Any) -> Any:
        if value in known:
            raise ValueError(f"{value!r} is a known variant; its own fields are required")
        return value

    return check
