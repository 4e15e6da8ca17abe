"""Helpers around the core API (the official SDK marks them experimental too): tool-call
bookkeeping for agents, a session-state accumulator and a permission broker."""

from acp.contrib.permissions import PermissionBroker, default_permission_options
from acp.contrib.session_state import SessionAccumulator, SessionSnapshot, ToolCallView
from acp.contrib.tool_calls import ToolCallTracker, TrackedToolCallView

__all__ = [
    "PermissionBroker",
    "SessionAccumulator",
    "SessionSnapshot",
    "ToolCallTracker",
    "ToolCallView",
    "TrackedToolCallView",
    "default_permission_options",
]
