"""`PermissionBroker`: ask the client about a tracked tool call, with sensible options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from acp import _generated_schema as s
from acp.contrib.tool_calls import ToolCallTracker
from acp.helpers import text_block, tool_content

__all__ = ["PermissionBroker", "default_permission_options"]


def default_permission_options() -> list[s.PermissionOption]:
    """Approve once, approve for the session, reject."""
    return [
        s.PermissionOption(option_id="approve", name="Approve", kind="allow_once"),
        s.PermissionOption(
            option_id="approve_for_session", name="Approve for session", kind="allow_always"
        ),
        s.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    ]


class PermissionBroker:
    """Builds `session/request_permission` for a tool call and hands it to `requester`
    (for example `lambda request: conn.request_permission(**request.model_dump())`)."""

    def __init__(
        self,
        session_id: str,
        requester: Callable[[s.RequestPermissionRequest], Awaitable[s.RequestPermissionResponse]],
        *,
        tracker: ToolCallTracker | None = None,
        default_options: Sequence[s.PermissionOption] | None = None,
    ) -> None:
        self.session_id = session_id
        self.requester = requester
        self.tracker = tracker or ToolCallTracker()
        self.default_options = list(default_options or default_permission_options())

    async def request_for(
        self,
        external_id: str,
        *,
        description: str | None = None,
        options: Sequence[s.PermissionOption] | None = None,
        content: Sequence[Any] | None = None,
        tool_call: s.ToolCallUpdate | None = None,
    ) -> s.RequestPermissionResponse:
        call = tool_call or self.tracker.tool_call_model(external_id)
        extra = list(content or [])
        if description:
            extra.append(tool_content(text_block(description)))
        if extra:
            call = call.model_copy(update={"content": [*(call.content or []), *extra]})
        request = s.RequestPermissionRequest(
            session_id=self.session_id,
            tool_call=call,
            options=list(options or self.default_options),
        )
        return await self.requester(request)
