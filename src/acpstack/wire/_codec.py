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
    includes invalid UTF-8 anywhere in the line, even where msgspec would skip it unread,
    and a line whose shape was refused before it was read to its end, such as `[1,`;
    -32600 for JSON that is not a message), with the id when one can be recovered."""
    if not frame.isascii():
        try:
            frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Invalid(PARSE_ERROR, _salvage_id(frame), f"invalid UTF-8 at byte {exc.start}")
    try:
        env = _envelope_decoder.decode(frame)
    except msgspec.ValidationError as exc:  # (a subclass of DecodeError: test it first)
        # Not an object (array, number, string, null) or a bad id/method type: found before
        # the rest was read, so whether the line is JSON at all is still to be checked.
        return _not_a_message(frame, exc)
    except msgspec.DecodeError as exc:
        return Invalid(
            PARSE_ERROR, _salvage_id(frame), f"invalid JSON: {_parse_detail(frame, exc)}"
        )
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


def _not_a_message(frame: bytes, refused: msgspec.ValidationError) -> Invalid:
    """-32600 for valid JSON that is not a message; -32700 when the line is not JSON (read
    to its end as a raw value: syntax only, numbers are not converted)."""
    try:
        msgspec.json.decode(frame, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        return Invalid(
            PARSE_ERROR, _salvage_id(frame), f"invalid JSON: {_parse_detail(frame, exc)}"
        )
    except RecursionError:
        return Invalid(PARSE_ERROR, _salvage_id(frame), "JSON nested too deeply")
    return Invalid(INVALID_REQUEST, _salvage_id(frame), f"not a JSON-RPC message: {refused}")


# A JSON string escape: `\uXXXX` (the hex digits kept), or a backslash and any one byte.
_ESCAPE_RE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_BYTE_RE = re.compile(r"\(byte (\d+)\)")


def _parse_detail(frame: bytes, exc: msgspec.DecodeError) -> str:
    """msgspec's reason, or a truer one for a lone UTF-16 surrogate escape (`"\\ud800"`),
    which msgspec reports as truncated input or a bad hex escape when it is near the end."""
    text = str(exc)
    if not (text.startswith("Input data was truncated") or "escape" in text or "surrogate" in text):
        return text
    lone = _lone_surrogate(frame)
    at = _BYTE_RE.search(text)
    if lone is None or (at is not None and lone.start() > int(at[1])):
        return text  # none, or after what msgspec stopped at
    return f"lone UTF-16 surrogate escape {lone[0].decode('ascii')} (byte {lone.start()})"


def _lone_surrogate(frame: bytes) -> re.Match[bytes] | None:
    """The first `\\uD800`-`\\uDFFF` escape that is not half of a surrogate pair."""
    high: re.Match[bytes] | None = None
    for match in _ESCAPE_RE.finditer(frame):
        unit = int(match[1], 16) if match[1] is not None else -1
        if high is not None:
            if match.start() == high.end() and 0xDC00 <= unit <= 0xDFFF:
                high = None
                continue
            return high
        if 0xD800 <= unit <= 0xDBFF:
            high = match
        elif 0xDC00 <= unit <= 0xDFFF:
            return match
    return high


def _known_id(env: Envelope) -> RequestId:
    return None if env.id is UNSET else env.id


# Salvaging what we can of a message we cannot (or will not) decode. Only top-level keys
# count: an "id" nested in params must never turn a notification into something we answer.
# A string is taken whole (possessive) and to the end when it is not closed: retrying an
# unclosed string from every quote inside it would cost quadratic time in its length.
_TOKEN_RE = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"?|[{}\[\]:,]', re.DOTALL)
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
