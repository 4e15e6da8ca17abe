"""What `ProtocolState.receive` hands the runtime: one event per message it could use (or drop)."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from acpstack.schema import MethodSpec
from acpstack.wire._capability import CapabilityError as CapabilityError
from acpstack.wire._errors import RequestError
from acpstack.wire._structs import RequestId

# ---- events -------------------------------------------------------------------

# The request and notification events are not tracked by the cyclic garbage collector
# (`gc=False`, like the wire types they carry): they are made for every message of a busy
# stream. `IncomingResponse` is, as its error may hold a traceback that leads back to it.


class IncomingRequest(Struct, gc=False):
    """A request of the peer that passed every check: answer it with
    `ProtocolState.result` or `ProtocolState.error`, using `id`.
    """

    id: RequestId
    """The request id, exactly as the peer sent it (answers must carry it)."""
    method: str
    """The method (an unofficial alias is already replaced by its ACP name)."""
    spec: MethodSpec | None
    """The method's row of the method table; None for `_` extension methods."""
    params: Any
    """The params decoded into the method's request Struct; for `_` methods, the plain JSON
    value."""


class IncomingNotification(Struct, gc=False):
    """A notification of the peer that passed every check (never answered)."""

    method: str
    """The method (an unofficial alias is already replaced by its ACP name)."""
    spec: MethodSpec | None
    """The method's row of the method table; None for `_` extension methods."""
    params: Any
    """The params decoded into the method's Struct; for `_` methods, the plain JSON value."""


class IncomingCancel(Struct):
    """The peer's `$/cancel_request`: it no longer wants the answer to `request_id`
    (answer it with -32800 if the work stops, or with its result if it finished)."""

    request_id: RequestId


class PendingCall(Struct):
    """One of our requests that waits for its answer (see `ProtocolState.start_request`)."""

    id: RequestId
    """The id we gave the request."""
    method: str
    """Its method."""
    result_type: type | None
    """The Struct its result is decoded into; None for `_` methods."""
    session_id: str | None
    """Its `params.session_id`, when it has one (answers are delivered after the notifications of
    that session that came before them)."""


class IncomingResponse(Struct):
    """The answer to one of our requests: `result` or `error` (exactly one is set,
    unless the result is JSON null).
    """

    call: PendingCall
    """The request it answers."""
    result: Any = None
    """The result, decoded into `call.result_type` (plain JSON for `_` methods)."""
    error: RequestError | None = None
    """The peer's error; also made locally for a result that does not decode ("Invalid result from
    peer") or an answer too large to read."""


class DroppedMessage(Struct):
    """An incoming message that was discarded without reaching the application, and that
    nobody else will report: a notification (too large, or with invalid params) or a line
    that could not be read as any message. The peer may have been answered with an error
    (`id: null` when the line had no id); the application learns of it through this event.

    ``reason`` is "too_large", "parse_error", "invalid_message" or "invalid_params".
    ``method`` and ``session_id`` are what could be read of the message (best effort)."""

    reason: str
    detail: str
    method: str | None = None
    session_id: str | None = None
    size: int = 0


Event = IncomingRequest | IncomingNotification | IncomingCancel | IncomingResponse | DroppedMessage
"""What `ProtocolState.receive` returns, one per message it could use (or dropped)."""
