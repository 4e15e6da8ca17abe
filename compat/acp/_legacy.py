"""The official SDK's pre-0.7 call style, which 0.12 still accepts with a
`DeprecationWarning`: handlers named in camelCase (`newSession`) or taking the whole request
(`async def prompt(self, params)`), and calls that pass the request model
(`conn.newSession(NewSessionRequest(...))`)."""

from __future__ import annotations

import functools
import inspect
import typing
import warnings
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel as _PydanticModel

__all__ = ["accept_request_models", "camel", "find_handler", "warn_old_handler"]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def find_handler(target: Any, name: str) -> tuple[Callable[..., Any] | None, str, bool]:
    """(the method, its name, whether it takes the request model whole)."""
    func = getattr(target, name, None)
    if func is None and "_" in name:
        old = camel(name)
        return getattr(target, old, None), old, True
    if callable(func) and "_" not in name:
        return func, name, _takes_params_whole(func)
    return func, name, False


# Per function: whether its only parameter is `params`. Asked on every request, and
# `inspect.signature` costs tens of microseconds: a round trip's largest single cost.
_whole_request: dict[Any, bool] = {}


def _takes_params_whole(func: Callable[..., Any]) -> bool:
    key = getattr(func, "__func__", func)  # a bound method: its function, shared by instances
    try:
        return _whole_request[key]
    except (KeyError, TypeError):  # TypeError: an unhashable callable, not kept
        pass
    try:
        whole = list(inspect.signature(func).parameters) == ["params"]
    except (TypeError, ValueError):
        whole = False
    try:
        if len(_whole_request) < 4096:  # bounded: objects with per-instance callables
            _whole_request[key] = whole
    except TypeError:
        pass
    return whole


def warn_old_handler(target: Any, name: str) -> None:
    warnings.warn(
        f"The old style method {type(target).__name__}.{name} is deprecated, "
        "please update to the snake-cased form.",
        DeprecationWarning,
        stacklevel=3,
    )


def _type_name(model: Any) -> str:
    arms = typing.get_args(model)
    return " | ".join(a.__name__ for a in arms) if arms else model.__name__


def _without_tags(model: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments less the variant's tag (`type="boolean"`): the method sets it itself."""
    tags = {
        name
        for name, spec in type(model).model_fields.items()
        if typing.get_origin(spec.annotation) is typing.Literal
    }
    return {k: v for k, v in kwargs.items() if k not in tags}


def accept_request_models(
    cls: type, models: dict[str, Any], to_kwargs: Callable[[Any], Any]
) -> None:
    """Let each method of `cls` named in `models` also take its request model whole (with a
    warning), and answer to its camelCase name."""
    for name, model in models.items():
        method = getattr(cls, name, None)
        if method is None:
            continue

        def wrap(method: Callable[..., Any], name: str, model: Any) -> Callable[..., Any]:
            @functools.wraps(method)
            async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
                if len(args) == 1 and not kwargs and isinstance(args[0], _PydanticModel):
                    warnings.warn(
                        f"Calling {name} with {_type_name(model)} parameter is deprecated, "
                        "please update to the new API style.",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    return await method(self, **_without_tags(args[0], to_kwargs(args[0])))
                return await method(self, *args, **kwargs)

            return call

        wrapped = wrap(method, name, model)
        setattr(cls, name, wrapped)
        if camel(name) != name and not hasattr(cls, camel(name)):
            setattr(cls, camel(name), wrapped)
