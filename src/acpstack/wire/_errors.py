"""JSON-RPC error codes and the one exception type that carries them.

Every layer raises `RequestError` for failures that the peer should see; the runtime
turns it into a JSON-RPC error object. Anything else raised by a handler becomes
-32603 with a generic message (details go to the log only).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
"""JSON-RPC: the message is not JSON."""
INVALID_REQUEST = -32600
"""JSON-RPC: the message is not a valid request."""
METHOD_NOT_FOUND = -32601
"""JSON-RPC: no such method (or one the receiver did not advertise)."""
INVALID_PARAMS = -32602
"""JSON-RPC: the params do not fit the method."""
INTERNAL_ERROR = -32603
"""JSON-RPC: the receiver failed."""
REQUEST_CANCELLED = -32800
"""ACP: the request was cancelled."""
AUTH_REQUIRED = -32000
"""ACP: authenticate first."""
RESOURCE_NOT_FOUND = -32002
"""ACP: the file, session or other resource does not exist."""
# Not defined by ACP. Chosen inside the implementation-defined -32001..-32099 range,
# away from -32000 (auth required) and -32002 (resource not found); seed 002 also
# uses -32005 for "access denied", so older peers read it the same way.
PERMISSION_DENIED = -32005
"""acpstack: the path is outside the session's workspace (not an ACP code)."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""ACP v2: `initialize` asked for a version below every one the agent speaks; data is
`{"requested": N, "supported": [...]}`."""


class RequestError(Exception):
    """A JSON-RPC error to send to (or received from) the peer.

    Raise it from a handler to answer with this error; a call whose answer is an error
    raises it. The constructors below make the standard ones with their usual message.
    `data` must be JSON-encodable; it goes to the peer as it is, so never put a secret
    or a stack trace in it.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code: int = code
        """The JSON-RPC error code (the module's constants name the known ones)."""
        self.message: str = message
        """One sentence for people."""
        self.data: Any = data
        """Details for programs (None: no `data` member is sent)."""

    def __repr__(self) -> str:
        return f"RequestError(code={self.code}, message={self.message!r}, data={self.data!r})"

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    @classmethod
    def parse_error(cls, data: Any = None) -> RequestError:
        """-32700: what the peer sent is not JSON."""
        return cls(PARSE_ERROR, "Parse error", data)

    @classmethod
    def invalid_request(cls, data: Any = None) -> RequestError:
        """-32600: JSON, but not a valid request (or not allowed now)."""
        return cls(INVALID_REQUEST, "Invalid request", data)

    @classmethod
    def method_not_found(cls, method: str) -> RequestError:
        """-32601 for `method`, which is named in `data`: unknown, or not offered here."""
        return cls(METHOD_NOT_FOUND, "Method not found", {"method": method})

    @classmethod
    def invalid_params(cls, data: Any = None, message: str = "Invalid params") -> RequestError:
        """-32602: the params are missing, of the wrong shape, or refused (e.g. a relative
        path); `message` may say which."""
        return cls(INVALID_PARAMS, message, data)

    @classmethod
    def internal_error(cls, data: Any = None) -> RequestError:
        """-32603: the request failed on our side (the details belong in the log)."""
        return cls(INTERNAL_ERROR, "Internal error", data)

    @classmethod
    def request_cancelled(cls, data: Any = None) -> RequestError:
        """-32800: the request was cancelled (`$/cancel_request`, or a shutdown) before it
        finished."""
        return cls(REQUEST_CANCELLED, "Request cancelled", data)

    @classmethod
    def auth_required(cls, data: Any = None) -> RequestError:
        """-32000: the agent needs `authenticate` before this request."""
        return cls(AUTH_REQUIRED, "Authentication required", data)

    @classmethod
    def resource_not_found(cls, uri: str | None = None) -> RequestError:
        """-32002: the file, session or terminal does not exist; `uri` names it (in the
        message and in `data`)."""
        message = "Resource not found" if uri is None else f"Resource not found: {uri}"
        return cls(RESOURCE_NOT_FOUND, message, None if uri is None else {"uri": uri})

    @classmethod
    def permission_denied(cls, path: str, message: str | None = None) -> RequestError:
        """-32005 for `path`: outside the session's workspace (the default message), or
        refused for the reason `message` gives."""
        text = message or f"Permission denied: {path} is outside the session's workspace"
        return cls(PERMISSION_DENIED, text, {"reason": "permission_denied", "path": path})

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC error object: `code`, `message`, and `data` unless it is None."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error
