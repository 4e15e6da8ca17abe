"""Just enough of a JSON-RPC message to route it: its kind, id, method and session.

Remote transports route messages by `params.sessionId` (and answers by request id)
without decoding them fully; msgspec skips everything else, so this costs about a
microsecond per message.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

RequestId = int | str | None


class _SessionRef(msgspec.Struct):
    session_id: Any = msgspec.field(default=None, name="sessionId")


class _ResultRef(msgspec.Struct):
    session_id: Any = msgspec.field(default=None, name="sessionId")
    # a prompt's outcome, read here so that the server's metrics need no second decode
    stop_reason: Any = msgspec.field(default=None, name="stopReason")


class _Peek(msgspec.Struct):
    id: int | str | None | UnsetType = UNSET
    method: Any = UNSET
    params: _SessionRef | UnsetType = UNSET
    result: _ResultRef | UnsetType = UNSET
    error: Any = UNSET


_peek_decoder = msgspec.json.Decoder(_Peek)


class Envelope(msgspec.Struct, frozen=True):
    """What `peek_envelope` found out about one message."""

    kind: str
    """The kind of message: "request", "notification", "response" or "invalid" (anything
    else)."""
    id: RequestId = None
    """The request id (requests and responses)."""
    method: str | None = None
    """The method (requests and notifications)."""
    session_id: str | None = None
    """`params.sessionId` of a request or notification, when a string."""
    result_session_id: str | None = None
    """`result.sessionId` of a response (to session/new, fork, ...), when a string."""
    stop_reason: str | None = None
    """`result.stopReason` of a response (to session/prompt), when a string."""
    error: Any = None
    """The `error` member of a response, as decoded (None when it has none)."""


INVALID = Envelope("invalid")


def peek_envelope(message: bytes) -> Envelope:
    """Classify one JSON message; raises msgspec.DecodeError when it is not JSON at all
    (or is nested deeper than the interpreter's recursion limit)."""
    try:
        try:
            p = _peek_decoder.decode(message)
        except msgspec.ValidationError:
            return _peek_loose(msgspec.json.decode(message))
    except RecursionError:
        raise msgspec.DecodeError("JSON nested too deeply") from None
    return _classify(p.id, p.method, p.params, p.result, p.error)


def _classify(rid: Any, method: Any, params: Any, result: Any, error: Any) -> Envelope:
    if method is not UNSET:
        if not isinstance(method, str):
            return INVALID
        session = params.session_id if isinstance(params, _SessionRef) else None
        session = session if isinstance(session, str) else None
        if rid is UNSET:
            return Envelope("notification", None, method, session)
        return Envelope("request", rid, method, session)
    if rid is not UNSET and (result is not UNSET or error is not UNSET):
        session = reason = None
        if isinstance(result, _ResultRef):
            session, reason = result.session_id, result.stop_reason
        return Envelope(
            "response",
            rid,
            None,
            None,
            session if isinstance(session, str) else None,
            reason if isinstance(reason, str) else None,
            None if error is UNSET else error,
        )
    return INVALID


def _peek_loose(data: Any) -> Envelope:
    """The slow path, for messages whose params or result are not objects (or ids of odd types)."""
    if not isinstance(data, dict):
        return INVALID
    rid = data.get("id", UNSET)
    if rid is not UNSET and not isinstance(rid, int | str) and rid is not None:
        return INVALID
    if isinstance(rid, bool):
        return INVALID

    params, result = data.get("params", UNSET), data.get("result", UNSET)
    return _classify(
        rid,
        data.get("method", UNSET),
        _SessionRef(params.get("sessionId"))
        if isinstance(params, dict)
        else _unset_or_none(params),
        _ResultRef(result.get("sessionId"), result.get("stopReason"))
        if isinstance(result, dict)
        else _unset_or_none(result),
        data.get("error", UNSET),
    )


def _unset_or_none(value: Any) -> Any:
    return UNSET if value is UNSET else None


def single_line(message: bytes) -> bytes:
    """The message on one line. A line break in valid JSON can only be whitespace between
    tokens, so a message that holds one is checked (without building its objects) and its
    breaks become spaces: one copy, never the decoded message (a 16 MiB pretty-printed
    body would otherwise cost several times its size). Raises msgspec.DecodeError for a
    message that is not JSON."""
    message = message.strip()
    if b"\n" in message or b"\r" in message:
        msgspec.json.decode(message, type=msgspec.Raw)  # valid JSON, or DecodeError
        return message.translate(_BREAKS_TO_SPACES)
    return message


_BREAKS_TO_SPACES = bytes.maketrans(b"\n\r", b"  ")
