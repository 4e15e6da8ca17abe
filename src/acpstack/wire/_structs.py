"""The msgspec Structs of `wire/`'s envelopes, in a module of their own: when `wire/` is
compiled with mypyc, this one stays interpreted (msgspec reads a Struct's field types from
its annotations, which a compiled module does not keep)."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from msgspec import UNSET, Raw, Struct, UnsetType

T = TypeVar("T")

RequestId = int | str | None
"""A JSON-RPC request id: an integer, a string, or null (in error answers to messages
whose id could not be read)."""


class Envelope(Struct):
    """Every JSON-RPC message shape at once; which fields are present decides the kind."""

    jsonrpc: Any = UNSET
    id: int | str | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class Invalid(Struct):
    """A frame that is not a valid message: answer with `code` to `id` (see `decode_envelope`)."""

    code: int
    id: RequestId
    detail: str


class Salvaged(Struct):
    """The top-level fields we could read from an undecodable message (best effort)."""

    id: RequestId = None
    method: str | None = None
    has_result: bool = False  # a "result" or "error" key: it looks like a response


class OutRequest(Struct):
    jsonrpc: str
    id: RequestId
    method: str
    params: Any


class OutNotification(Struct):
    jsonrpc: str
    method: str
    params: Any


class OutResult(Struct):
    jsonrpc: str
    id: RequestId
    result: Any


class OutError(Struct):
    jsonrpc: str
    id: RequestId
    error: Any


class WireError(Struct):
    code: int
    message: str
    data: Any = None


class TypedResponse(Struct, Generic[T]):
    """The answer to a call whose result type is known (an error answer does not fit)."""

    jsonrpc: Literal["2.0"]
    id: int | str | None
    result: T
    error: UnsetType = UNSET
