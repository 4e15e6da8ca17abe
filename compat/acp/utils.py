"""Small helpers the official SDK exposes in `acp.utils`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["param_model", "param_models", "serialize_params", "to_camel_case"]

F = TypeVar("F", bound=Callable[..., Any])


def serialize_params(params: BaseModel) -> dict[str, Any]:
    """A model as its wire JSON object (camelCase names, absent fields left out)."""
    return params.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


def to_camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def param_model(model: type[BaseModel]) -> Callable[[F], F]:
    """Marks a method with the request model its keyword arguments come from."""

    def mark(func: F) -> F:
        func.__param_model__ = model  # type: ignore[attr-defined]
        return func

    return mark


def param_models(*models: type[BaseModel]) -> Callable[[F], F]:
    """Marks a method whose keyword arguments come from one of several request models."""
    if not models:
        raise ValueError("param_models() needs at least one model")

    def mark(func: F) -> F:
        func.__param_models__ = models  # type: ignore[attr-defined]
        return func

    return mark
