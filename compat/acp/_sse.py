"""Server-sent events as the official SDK's HTTP transport frames them: one JSON-RPC message
per `data:` event; comments (`: keepalive`) and other fields are skipped when reading."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["parse_sse_stream", "serialize_sse_event", "serialize_sse_keepalive"]


def serialize_sse_event(message: Any) -> bytes:
    return b"data: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


def serialize_sse_keepalive() -> bytes:
    return b": keepalive\n\n"


def _decoded(data: list[str]) -> Any:
    try:
        return json.loads("\n".join(data))
    except ValueError:
        return None  # a payload that is not JSON is skipped, as upstream


async def parse_sse_stream(chunks: AsyncIterator[bytes]) -> AsyncIterator[Any]:
    """The JSON payloads of the events in `chunks` (bytes split anywhere)."""
    pending = b""
    data: list[str] = []
    async for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if line == "":
                if data and (event := _decoded(data)) is not None:
                    yield event
                data = []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
    if pending.startswith(b"data:"):
        data.append(pending[5:].decode("utf-8", "replace").removeprefix(" "))
    if data and (event := _decoded(data)) is not None:
        yield event
