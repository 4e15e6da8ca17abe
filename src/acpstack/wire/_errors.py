"""JSON-RPC error codes and the one exception type that carries them.

Every layer raises `RequestError` for failures that the peer should see; the runtime
turns it into a JSON-RPC error object. Anything else raised by a handler becomes
-32603 with a generic message (details go to the log only).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
# Not defined by ACP. Chosen inside the implementation-defined -32001..-32099 range,
# away from -32000 (auth required) and -32002 (resource not found); seed 002 also
# uses -32005 for "access denied", so older peers read it the same way.
PERMISSION_DENIED = -32005
# ACP v2: `initialize` asked for a version the agent speaks none at or below of; data is
# `{"requested": N, "supported": [...]}`.
UNSUPPORTED_PROTOCOL_VERSION = -32022


class RequestError(Exception):
    """A JSON-RPC error to send to (or received from) the peer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"RequestError(code={self.code}, message={self.message!r}, data={self.data!r})"

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    @classmethod
    def parse_error(cls, data: Any = None) -> RequestError:
        return cls(PARSE_ERROR, "Parse error", data)

    @classmethod
    def invalid_request(cls, data: Any = None) -> RequestError:
        return cls(INVALID_REQUEST, "Invalid request", data)

    @classmethod
    def method_not_found(cls, method: str) -> RequestError:
        return cls(METHOD_NOT_FOUND, "Method not found", {"method": method})

    @classmethod
    def invalid_params(cls, data: Any = None, message: str = "Invalid params") -> RequestError:
        return cls(INVALID_PARAMS, message, data)

    @classmethod
    def internal_error(cls, data: Any = None) -> RequestError:
        return cls(INTERNAL_ERROR, "Internal error", data)

    @classmethod
    def request_cancelled(cls, data: Any = None) -> RequestError:
        return cls(REQUEST_CANCELLED, "Request cancelled", data)

    @classmethod
    def auth_required(cls, data: Any = None) -> RequestError:
        return cls(AUTH_REQUIRED, "Authentication required", data)

    @classmethod
    def resource_not_found(cls, uri: str | None = None) -> RequestError:
        message = "Resource not found" if uri is None else f"Resource not found: {uri}"
        return cls(RESOURCE_NOT_FOUND, message, None if uri is None else {"uri": uri})

    @classmethod
    def permission_denied(cls, path: str, message: str | None = None) -> RequestError:
        text = message or f"Permission denied: {path} is outside the session's workspace"
        return cls(PERMISSION_DENIED, text, {"reason": "permission_denied", "path": path})

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error
