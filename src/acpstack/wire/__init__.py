"""Sans-IO JSON-RPC for ACP: framing, envelopes, errors and the connection state machine."""

from acpstack.wire._capability import capability_allows
from acpstack.wire._connection import ProtocolState
from acpstack.wire._errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PERMISSION_DENIED,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    RequestError,
)
from acpstack.wire._events import (
    CapabilityError,
    DroppedMessage,
    Event,
    IncomingCancel,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    PendingCall,
)
from acpstack.wire._framing import (
    DEFAULT_MAX_MESSAGE_SIZE,
    FrameDecoder,
    FramingError,
    Oversized,
    encode_frame,
)
from acpstack.wire._negotiation import HANDSHAKE_METHODS
from acpstack.wire._results import InvalidResult, checked_result
from acpstack.wire._structs import RequestId

__all__ = [
    "AUTH_REQUIRED",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "HANDSHAKE_METHODS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PERMISSION_DENIED",
    "REQUEST_CANCELLED",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "CapabilityError",
    "DroppedMessage",
    "Event",
    "FrameDecoder",
    "FramingError",
    "IncomingCancel",
    "IncomingNotification",
    "IncomingRequest",
    "IncomingResponse",
    "InvalidResult",
    "Oversized",
    "PendingCall",
    "ProtocolState",
    "RequestError",
    "RequestId",
    "capability_allows",
    "checked_result",
    "encode_frame",
]
