"""What `ProtocolState.receive` hands the runtime: one event per message it could use (or drop)."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from acpstack.schema import MethodSpec
from acpstack.wire._codec import RequestId
from acpstack.wire._errors import RequestError


class CapabilityError(RuntimeError):
    """Raised instead of sending a call the peer did not advertise (or before initialize)."""


# ---- events -------------------------------------------------------------------


class IncomingRequest(Struct):
    id: RequestId
    method: str
    spec: MethodSpec | None  # None for `_` extension methods
    params: Any


class IncomingNotification(Struct):
    method: str
    spec: MethodSpec | None
    params: Any


class IncomingCancel(Struct):
    request_id: RequestId


class PendingCall(Struct):
    id: RequestId
    method: str
    result_type: type | None
    session_id: str | None


class IncomingResponse(Struct):
    call: PendingCall
    result: Any = None
    error: RequestError | None = None


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
