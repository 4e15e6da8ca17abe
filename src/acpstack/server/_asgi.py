"""Small ASGI helpers: headers, bodies, plain responses."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import msgspec

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = Sequence[tuple[str, str]]

# on an answer that refuses a request: the server closes the connection after it rather
# than read (and throw away) whatever body the client still sends
CLOSE: tuple[tuple[str, str], ...] = (("Connection", "close"),)


def header_map(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name (repeated headers joined with ", ")."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _encode(headers: Headers) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def respond(
    send: Send,
    status: int,
    body: bytes | str = b"",
    *,
    content_type: str = "text/plain; charset=utf-8",
    headers: Headers = (),
) -> None:
    data = body.encode() if isinstance(body, str) else body
    all_headers = list(headers)
    if data:
        all_headers.append(("Content-Type", content_type))
    all_headers.append(("Content-Length", str(len(data))))
    await send({"type": "http.response.start", "status": status, "headers": _encode(all_headers)})
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def respond_json(send: Send, status: int, body: bytes, *, headers: Headers = ()) -> None:
    await respond(send, status, body, content_type="application/json", headers=headers)


def jsonrpc_error(request_id: Any, code: int, message: str) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


class BodyRefused(Exception):
    """A request body that is not read to its end: the status and message to answer
    (the connection is then closed, so the rest of the body is never read)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_body(
    receive: Receive, limit: int, timeout: float, declared: str | None = None
) -> bytes | None:
    """The whole request body, or None when the client left. Raises `BodyRefused` (413)
    when it is larger than `limit`, at once when `declared` (Content-Length) says so, and
    (408) when it has not all come within `timeout` seconds."""
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyRefused(413, f"a message may hold at most {limit} bytes")
    # the chunks go into one growing buffer as they come (not a list joined at the end,
    # which holds the body twice at once); `getvalue` then hands that buffer over without
    # copying it (CPython's BytesIO shares it when nothing else does)
    buffer = io.BytesIO()
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise BodyRefused(413, f"a message may hold at most {limit} bytes")
                more = message.get("more_body", False)
                if not more and size == len(chunk):
                    return chunk  # the whole body in one chunk: taken as it is
                buffer.write(chunk)
                if not more:
                    break
    except TimeoutError:
        raise BodyRefused(408, f"the body did not come within {timeout:g} s") from None
    return buffer.getvalue()


def start_message(status: int, headers: Headers) -> Message:
    return {"type": "http.response.start", "status": status, "headers": _encode(headers)}
