"""JSON-RPC 2.0 envelopes: decode one frame into a message, encode outgoing messages."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.wire._errors import INVALID_REQUEST, PARSE_ERROR
from acpstack.wire._structs import (
    Envelope as Envelope,
)
from acpstack.wire._structs import (
    Invalid as Invalid,
)
from acpstack.wire._structs import (
    OutError,
    OutNotification,
    OutRequest,
    OutResult,
    RequestId,
    Salvaged,
)

_envelope_decoder = msgspec.json.Decoder(Envelope)
# What msgspec (or the interpreter under it) raises for input it cannot represent: nesting
# deeper than the recursion limit, numbers out of range, integers past int_max_str_digits.
UNDECODABLE = (
    msgspec.DecodeError,
    msgspec.ValidationError,
    RecursionError,
    ValueError,
    OverflowError,
)


def decode_envelope(frame: bytes) -> Envelope | Invalid:
    """Decode one frame. A returned Envelope is a valid message: it has a method (a request
    when it also has an id, else a notification), or an id and exactly one of result/error.

    Never raises: anything else becomes `Invalid` (-32700 for what is not JSON text, which
    includes invalid UTF-8 anywhere in the line, even where msgspec would skip it unread;
    -32600 for JSON that is not a message), with the id when one can be recovered."""
    if not frame.isascii():
        try:
            frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Invalid(PARSE_ERROR, _salvage_id(frame), f"invalid UTF-8 at byte {exc.start}")
    try:
        env = _envelope_decoder.decode(frame)
    except msgspec.ValidationError as exc:  # (a subclass of DecodeError: test it first)
        # Valid JSON but not an object (array, number, string, null) or a bad id/method type.
        return Invalid(INVALID_REQUEST, _salvage_id(frame), f"not a JSON-RPC message: {exc}")
    except msgspec.DecodeError as exc:
        return Invalid(PARSE_ERROR, _salvage_id(frame), f"invalid JSON: {exc}")
    except RecursionError:
        return Invalid(PARSE_ERROR, _salvage_id(frame), "JSON nested too deeply")
    except (ValueError, OverflowError) as exc:
        return Invalid(PARSE_ERROR, _salvage_id(frame), f"unrepresentable JSON value: {exc}")
    if env.jsonrpc != "2.0":
        return Invalid(
            INVALID_REQUEST, _known_id(env), 'missing or wrong "jsonrpc" (must be "2.0")'
        )
    if env.method is not UNSET:
        if env.result is not UNSET or env.error is not UNSET:
            return Invalid(
                INVALID_REQUEST,
                _known_id(env),
                "a message cannot carry both method and result/error",
            )
        return env
    if env.id is not UNSET and (env.result is UNSET) != (env.error is UNSET):
        return env
    return Invalid(
        INVALID_REQUEST, _known_id(env), "neither a request, a notification nor a response"
    )


def _known_id(env: Envelope) -> RequestId:
    return None if env.id is UNSET else env.id


# Salvaging what we can of a message we cannot (or will not) decode. Only top-level keys
# count: an "id" nested in params must never turn a notification into something we answer.
_TOKEN_RE = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')
_SCALAR_RE = re.compile(rb'\s*(-?\d{1,19}(?=\s*[,}\]])|"(?:[^"\\]|\\.){0,1024}")')
SALVAGE_LIMIT = 1024 * 1024  # bytes scanned at most


def salvage(frame: bytes) -> Salvaged:
    found = Salvaged()
    data = frame[:SALVAGE_LIMIT]
    depth = 0
    previous = b""
    for match in _TOKEN_RE.finditer(data):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                break
        elif token == b":" and depth == 1 and previous.startswith(b'"'):
            # A string right before a colon at the top level is a key, even when the comma
            # before it was damaged: a response whose id is still readable must fail its call.
            _take(found, previous, data, match.end())
        previous = token
    return found


def _take(found: Salvaged, key: bytes, data: bytes, pos: int) -> None:
    if key in (b'"result"', b'"error"'):
        found.has_result = True
        return
    if key not in (b'"id"', b'"method"'):
        return
    match = _SCALAR_RE.match(data, pos)
    if match is None:
        return
    try:
        value = msgspec.json.decode(match.group(1))
    except UNDECODABLE:
        return
    if key == b'"id"' and isinstance(value, int | str) and not isinstance(value, bool):
        found.id = value
    elif key == b'"method"' and isinstance(value, str):
        found.method = value


def _salvage_id(frame: bytes) -> RequestId:
    """Best effort: the top-level id of a message we cannot (or will not) fully decode."""
    return salvage(frame).id


def salvage_id(prefix: bytes) -> RequestId:
    return salvage(prefix).id


_SESSION_RE = re.compile(rb'"sessionId"\s*:\s*("(?:[^"\\]|\\.){1,256}")')


def salvage_session_id(prefix: bytes) -> str | None:
    """Best effort, for reports only: a sessionId anywhere in the message."""
    match = _SESSION_RE.search(prefix[:SALVAGE_LIMIT])
    if match is None:
        return None
    try:
        value = msgspec.json.decode(match.group(1))
    except UNDECODABLE:
        return None
    return value if isinstance(value, str) else None


# ---- encoding ---------------------------------------------------------------


_encoder = msgspec.json.Encoder()


def encode_request(rid: RequestId, method: str, params: Any) -> bytes:
    return _encoder.encode(OutRequest("2.0", rid, method, params))


def encode_notification(method: str, params: Any) -> bytes:
    return _encoder.encode(OutNotification("2.0", method, params))


def encode_result(rid: RequestId, result: Any) -> bytes:
    return _encoder.encode(OutResult("2.0", rid, result))


def encode_error(rid: RequestId, error: dict[str, Any]) -> bytes:
    return _encoder.encode(OutError("2.0", rid, error))
