"""Names and small routing rules of the streamable HTTP / WebSocket transport (the ACP RFD),
as the official SDK's `acp.http.protocol` exposes them. The header names are acpstack's."""

from __future__ import annotations

from typing import Any

from acpstack.transports import CONNECTION_HEADER, SESSION_HEADER

__all__ = [
    "ACP_ENDPOINT_PATH",
    "CONNECTION_ID_HEADER",
    "CONTENT_TYPE_JSON",
    "CONTENT_TYPE_SSE",
    "INITIALIZE_METHOD",
    "SESSION_ID_HEADER",
    "is_initialize_request",
    "is_response_message",
    "message_id_key",
    "method_requires_session_header",
    "session_id_from_message",
    "session_id_from_params",
    "session_id_from_result",
]

CONNECTION_ID_HEADER = CONNECTION_HEADER
SESSION_ID_HEADER = SESSION_HEADER
CONTENT_TYPE_JSON = "application/json"
CONTENT_TYPE_SSE = "text/event-stream"
ACP_ENDPOINT_PATH = "/acp"
INITIALIZE_METHOD = "initialize"

# Methods about a session the client already has a stream for. The ones that create or
# reattach a session (new, load, fork, resume) and `session/list` are connection-level:
# their answers come on the connection's stream.
_SESSION_METHODS = frozenset(
    {
        "session/prompt",
        "session/cancel",
        "session/set_mode",
        "session/set_config_option",
        "session/close",
    }
)


def is_initialize_request(message: dict[str, Any]) -> bool:
    return message.get("method") == INITIALIZE_METHOD and "id" in message


def is_response_message(message: dict[str, Any]) -> bool:
    return "id" in message and "method" not in message


def method_requires_session_header(method: str | None) -> bool:
    return method in _SESSION_METHODS


def message_id_key(message_id: Any) -> str | None:
    """A request id as a string key (ids may come back as 1 or "1")."""
    return None if message_id is None else str(message_id)


def _session_id(container: Any) -> str | None:
    if isinstance(container, dict) and isinstance(found := container.get("sessionId"), str):
        return found
    return None


def session_id_from_params(params: Any) -> str | None:
    return _session_id(params)


def session_id_from_result(result: Any) -> str | None:
    return _session_id(result)


def session_id_from_message(message: dict[str, Any]) -> str | None:
    return _session_id(message.get("params")) or _session_id(message.get("result"))
