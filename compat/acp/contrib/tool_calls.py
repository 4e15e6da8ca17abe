"""`ToolCallTracker`: an agent's tool calls by its own ids, with the updates to send."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp import _generated_schema as s
from acp.helpers import text_block, tool_content

__all__ = ["ToolCallTracker", "TrackedToolCallView"]

_FIELDS = ("title", "kind", "status", "content", "locations", "raw_input", "raw_output")


@dataclass(frozen=True)
class TrackedToolCallView:
    """What is known of one tool call now."""

    tool_call_id: str
    title: str | None
    kind: Any
    status: Any
    content: tuple[Any, ...] | None
    locations: tuple[Any, ...] | None
    raw_input: Any
    raw_output: Any


@dataclass
class _Tracked:
    tool_call_id: str
    values: dict[str, Any] = field(default_factory=dict)
    stream_text: str = ""

    def view(self) -> TrackedToolCallView:
        v = self.values
        return TrackedToolCallView(
            self.tool_call_id,
            v.get("title"),
            v.get("kind"),
            v.get("status"),
            tuple(v["content"]) if v.get("content") is not None else None,
            tuple(v["locations"]) if v.get("locations") is not None else None,
            v.get("raw_input"),
            v.get("raw_output"),
        )


class ToolCallTracker:
    """Give tool calls ids, remember their state, and build `ToolCallStart`/`ToolCallProgress`."""

    def __init__(self, *, id_factory: Callable[[], str] | None = None) -> None:
        self._new_id = id_factory or (lambda: uuid.uuid4().hex)
        self._calls: dict[str, _Tracked] = {}

    def _get(self, external_id: str) -> _Tracked:
        try:
            return self._calls[external_id]
        except KeyError:
            raise KeyError(f"unknown tool call {external_id!r}") from None

    def start(self, external_id: str, *, title: str, **values: Any) -> s.ToolCallStart:
        tracked = _Tracked(self._new_id(), {"title": title, **_known(values)})
        self._calls[external_id] = tracked
        return s.ToolCallStart(
            session_update="tool_call", tool_call_id=tracked.tool_call_id, **_set(tracked.values)
        )

    def progress(self, external_id: str, **values: Any) -> s.ToolCallProgress:
        tracked = self._get(external_id)
        changed = _known(values)
        tracked.values.update(changed)
        return s.ToolCallProgress(
            session_update="tool_call_update", tool_call_id=tracked.tool_call_id, **_set(changed)
        )

    def append_stream_text(
        self, external_id: str, text: str, *, title: str | None = None, status: Any = None
    ) -> s.ToolCallProgress:
        """Add to the call's streamed text; the update carries all of it so far."""
        tracked = self._get(external_id)
        tracked.stream_text += text
        values: dict[str, Any] = {"content": [tool_content(text_block(tracked.stream_text))]}
        if title is not None:
            values["title"] = title
        if status is not None:
            values["status"] = status
        return self.progress(external_id, **values)

    def forget(self, external_id: str) -> None:
        self._calls.pop(external_id, None)

    def view(self, external_id: str) -> TrackedToolCallView:
        return self._get(external_id).view()

    def tool_call_model(self, external_id: str) -> s.ToolCallUpdate:
        tracked = self._get(external_id)
        return s.ToolCallUpdate(tool_call_id=tracked.tool_call_id, **_set(tracked.values))


def _known(values: dict[str, Any]) -> dict[str, Any]:
    unknown = set(values) - set(_FIELDS)
    if unknown:
        raise TypeError(f"unknown tool call fields: {', '.join(sorted(unknown))}")
    return {
        k: list(v) if isinstance(v, Sequence) and k in ("content", "locations") else v
        for k, v in values.items()
        if v is not None
    }


def _set(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
