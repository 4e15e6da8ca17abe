"""`acp.exceptions.RequestError`: a JSON-RPC error, as the official SDK spells it.

It is acpstack's own `RequestError` underneath, so raising it from a handler answers the
peer with that error through acpstack's runtime, and errors from the peer arrive as it."""

from __future__ import annotations

from typing import Any

from acpstack.wire import RequestError as _WireRequestError

__all__ = ["RequestError"]


class RequestError(_WireRequestError):
    """A JSON-RPC 2.0 error (code, message, data)."""

    def __str__(self) -> str:
        return self.message

    @classmethod
    def auth_required(cls, data: Any = None) -> RequestError:
        return cls(-32000, "Authentication required", data)

    @classmethod
    def resource_not_found(cls, uri: str | None = None) -> RequestError:
        return cls(-32002, "Resource not found", {"uri": uri} if uri is not None else None)

    def to_error_obj(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": self.data}

    @classmethod
    def from_wire(cls, err: _WireRequestError) -> RequestError:
        return err if isinstance(err, cls) else cls(err.code, err.message, err.data)
