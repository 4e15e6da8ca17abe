"""JSON-RPC 2.0 envelopes: decode one frame into a message, encode outgoing messages."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

RequestId = int | str | None


class Envelope(Struct):
    """Every JSON-RPC message shape at once; which fields are present decides the kind."""

    jsonrpc: Any = UNSET
    id: int | str | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class Request(Struct):
    id: RequestId
    method: str
    params: Raw | UnsetType


class Notification(Struct):
    method: str
    params: Raw | UnsetType


class Response(Struct):
    id: RequestId
    result: Raw | UnsetType
    error: Raw | UnsetType


class Invalid(Struct):
    """A frame that is not a valid message: answer with `code` to `id`."""

    code: int
    id: RequestId
    detail: str


Message = Request | Notification | Response | Invalid

_envelope_decoder = msgspec.json.Decoder(Envelope)
_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600


def decode_envelope(frame: bytes) -> Envelope | Invalid:
    """Decode one frame. A returned Envelope is a valid message: it has a method (a request
    when it also has an id, else a notification), or an id and exactly one of result/error."""
    try:
        env = _envelope_decoder.decode(frame)
    except msgspec.ValidationError as exc:  # (a subclass of DecodeError: test it first)
        # Valid JSON but not an object (array, number, string, null) or a bad id/method type.
        return Invalid(_INVALID_REQUEST, _salvage_id(frame), f"not a JSON-RPC message: {exc}")
    except msgspec.DecodeError as exc:
        return Invalid(_PARSE_ERROR, None, f"invalid JSON: {exc}")
    if env.jsonrpc != "2.0":
        return Invalid(_INVALID_REQUEST, _known_id(env), 'missing or wrong "jsonrpc" (must be "2.0")')
    if env.method is not UNSET:
        if env.result is not UNSET or env.error is not UNSET:
            return Invalid(_INVALID_REQUEST, _known_id(env), "a message cannot carry both method and result/error")
        return env
    if env.id is not UNSET and (env.result is UNSET) != (env.error is UNSET):
        return env
    return Invalid(_INVALID_REQUEST, _known_id(env), "neither a request, a notification nor a response")


def _known_id(env: Envelope) -> RequestId:
    return None if env.id is UNSET else env.id


def decode_message(frame: bytes) -> Message:
    """Decode one frame into the kind of message it is."""
    env = decode_envelope(frame)
    if isinstance(env, Invalid):
        return env
    if env.method is not UNSET:
        if env.id is UNSET:
            return Notification(env.method, env.params)
        return Request(env.id, env.method, env.params)
    return Response(_known_id(env), env.result, env.error)


_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d{1,19}(?=\s*[,}])|"(?:[^"\\]|\\.){0,256}")')


def _salvage_id(prefix: bytes) -> RequestId:
    """Best effort: read the id of a message we cannot (or will not) fully decode."""
    match = _ID_RE.search(prefix)
    if match is None:
        return None
    try:
        value = msgspec.json.decode(match.group(1))
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, int | str) else None


def salvage_id(prefix: bytes) -> RequestId:
    return _salvage_id(prefix)


def looks_like_request(prefix: bytes) -> bool:
    return b'"method"' in prefix


# ---- encoding ---------------------------------------------------------------


class _OutRequest(Struct):
    jsonrpc: str
    id: RequestId
    method: str
    params: Any


class _OutNotification(Struct):
    jsonrpc: str
    method: str
    params: Any


class _OutResult(Struct):
    jsonrpc: str
    id: RequestId
    result: Any


class _OutError(Struct):
    jsonrpc: str
    id: RequestId
    error: Any


_encoder = msgspec.json.Encoder()


def encode_request(rid: RequestId, method: str, params: Any) -> bytes:
    return _encoder.encode(_OutRequest("2.0", rid, method, params))


def encode_notification(method: str, params: Any) -> bytes:
    return _encoder.encode(_OutNotification("2.0", method, params))


def encode_result(rid: RequestId, result: Any) -> bytes:
    return _encoder.encode(_OutResult("2.0", rid, result))


def encode_error(rid: RequestId, error: dict[str, Any]) -> bytes:
    return _encoder.encode(_OutError("2.0", rid, error))
