"""Frames as the checker saw them on the wire, and how they are shown in a report."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["in", "out"]  # in: written by the agent; out: written by the checker
SHOW_LIMIT = 400
#: Bytes of each frame kept for the report (a frame may be megabytes long).
KEEP_LIMIT = 16 * 1024


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Any = _NotJson()
"""`Frame.message` of a line that is not JSON (compare with `is`)."""


@dataclass
class Frame:
    """One line as the probe saw it on the wire, in either direction."""

    seq: int
    """Its position among the connection's frames (from 1, both directions)."""
    at: float
    """Seconds since the connection opened."""
    direction: Direction
    """Who wrote it: "in" for the peer, "out" for the probe."""
    raw: bytes
    """The line without its newline; at most 16 KiB of it."""
    size: int
    """The line's full length in bytes."""
    message: Any
    """The parsed JSON value; a placeholder (`NOT_JSON`) when the line is not JSON, and then
    `problem` says why."""
    problem: str = ""
    """Why it is not a message ("not JSON: ...", "a line of N bytes ...")."""

    @property
    def is_object(self) -> bool:
        """Whether the message is a JSON object (every JSON-RPC message is)."""
        return isinstance(self.message, dict)

    @property
    def method(self) -> str | None:
        """The `method` of a request or notification (None otherwise)."""
        method = self.message.get("method") if self.is_object else None
        return method if isinstance(method, str) else None

    @property
    def is_request(self) -> bool:
        """A method and an id."""
        return self.method is not None and "id" in self.message

    @property
    def is_notification(self) -> bool:
        """A method and no id."""
        return self.method is not None and "id" not in self.message

    @property
    def is_response(self) -> bool:
        """An object with an id and no method (a result or an error)."""
        return self.is_object and self.method is None and "id" in self.message

    @property
    def params(self) -> Any:
        """The `params` member as sent (None when absent or not an object message)."""
        return self.message.get("params") if self.is_object else None

    @property
    def session_id(self) -> str | None:
        """`params.sessionId`, when it is a string."""
        params = self.params
        value = params.get("sessionId") if isinstance(params, dict) else None
        return value if isinstance(value, str) else None

    @property
    def update_kind(self) -> str | None:
        """The `sessionUpdate` tag of a session/update notification."""
        if self.method != "session/update" or not isinstance(self.params, dict):
            return None
        update = self.params.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        return kind if isinstance(kind, str) else None

    def show(self, limit: int = SHOW_LIMIT) -> str:
        """One line for a report: an arrow for the direction ("<-" from the peer), the
        compact JSON (or the raw text and problem) cut to `limit` characters, and the
        size when it was cut."""
        arrow = "<-" if self.direction == "in" else "->"
        if self.message is NOT_JSON:
            text = self.raw[:limit].decode("utf-8", "replace")
            body = f"{text!r}" + (f" ({self.problem})" if self.problem else "")
        else:
            body = json.dumps(self.message, ensure_ascii=False, separators=(",", ":"))
        if len(body) > limit:
            body = body[: limit - 3] + "..."
        more = f" [{self.size} bytes]" if self.size > limit else ""
        return f"{arrow} {body}{more}"


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (agents send anything)."""
    return value if isinstance(value, dict) else {}


def parse(raw: bytes) -> tuple[Any, str]:
    """The JSON value of a frame, or (NOT_JSON, why)."""
    try:
        return json.loads(raw, parse_constant=_reject_constant), ""
    except (ValueError, RecursionError) as exc:
        return NOT_JSON, f"not JSON: {exc}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def show_all(frames: list[Frame], limit: int = 12) -> list[str]:
    shown = [frame.show() for frame in frames[:limit]]
    if len(frames) > limit:
        shown.append(f"... and {len(frames) - limit} more frames")
    return shown
