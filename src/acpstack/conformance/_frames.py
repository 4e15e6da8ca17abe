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


@dataclass
class Frame:
    seq: int
    at: float  # seconds since the connection opened
    direction: Direction
    raw: bytes  # at most KEEP_LIMIT bytes of the frame
    size: int
    message: Any  # the parsed JSON value, or NOT_JSON
    problem: str = ""  # why it is not a message ("not JSON: ...", "longer than ...")

    @property
    def is_object(self) -> bool:
        return isinstance(self.message, dict)

    @property
    def method(self) -> str | None:
        method = self.message.get("method") if self.is_object else None
        return method if isinstance(method, str) else None

    @property
    def is_request(self) -> bool:
        return self.method is not None and "id" in self.message

    @property
    def is_notification(self) -> bool:
        return self.method is not None and "id" not in self.message

    @property
    def is_response(self) -> bool:
        return self.is_object and self.method is None and "id" in self.message

    @property
    def params(self) -> Any:
        return self.message.get("params") if self.is_object else None

    @property
    def session_id(self) -> str | None:
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
