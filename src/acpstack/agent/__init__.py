"""The agent side: implement `Agent` (or `SessionAgent`), talk to the client through `ClientPeer`.

`Agent` and the serving functions load with the package; the `SessionAgent` runtime (its
session store, SQLite, turn helpers) loads on first use, so an agent that does not use it
starts faster.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from acpstack.agent._agent import Agent, ClientPeer
from acpstack.agent._connect import connect_agent, run_agent, serve_stdio

if TYPE_CHECKING:
    from acpstack.agent._cancel import CancelScope
    from acpstack.agent._leases import SESSION_BUSY
    from acpstack.agent._local_access import Fallback, LocalAccess
    from acpstack.agent._mcp import McpConnections, McpServerError, McpTool, McpToolResult
    from acpstack.agent._runtime import SessionAgent
    from acpstack.agent._session import Session
    from acpstack.agent._store import (
        MemorySessionStore,
        PostgresSessionStore,
        SessionBusy,
        SessionChanges,
        SessionLeases,
        SessionRecord,
        SessionStore,
        SqliteSessionStore,
        StoredEvent,
        default_store_path,
        open_store,
    )
    from acpstack.agent._turn import (
        STANDARD_OPTIONS,
        ClientCapabilityMissing,
        CommandResult,
        PermissionDecision,
        ToolCallHandle,
        Turn,
        diff_content,
        output_content,
        terminal_content,
        text_content,
    )
    from acpstack.agent._turn_extras import (
        Compaction,
        ElicitationAnswer,
        InterSessionMessage,
        Subagent,
    )
    from acpstack.agent._unstable import ProviderSettings
    from acpstack.agent._writer import observe_store_batches

_LAZY = {
    "CancelScope": "_cancel",
    "McpConnections": "_mcp",
    "McpServerError": "_mcp",
    "McpTool": "_mcp",
    "McpToolResult": "_mcp",
    "SESSION_BUSY": "_leases",
    "Fallback": "_local_access",
    "LocalAccess": "_local_access",
    "SessionAgent": "_runtime",
    "ProviderSettings": "_unstable",
    "ElicitationAnswer": "_turn_extras",
    "Compaction": "_turn_extras",
    "InterSessionMessage": "_turn_extras",
    "Subagent": "_turn_extras",
    "Session": "_session",
    "MemorySessionStore": "_store",
    "PostgresSessionStore": "_store",
    "SessionBusy": "_store",
    "SessionChanges": "_store",
    "SessionLeases": "_store",
    "SessionRecord": "_store",
    "SessionStore": "_store",
    "SqliteSessionStore": "_store",
    "StoredEvent": "_store",
    "default_store_path": "_store",
    "open_store": "_store",
    "STANDARD_OPTIONS": "_turn",
    "ClientCapabilityMissing": "_turn",
    "CommandResult": "_turn",
    "PermissionDecision": "_turn",
    "ToolCallHandle": "_turn",
    "Turn": "_turn",
    "diff_content": "_turn",
    "output_content": "_turn",
    "terminal_content": "_turn",
    "text_content": "_turn",
    "observe_store_batches": "_writer",
}

__all__ = [
    "SESSION_BUSY",
    "STANDARD_OPTIONS",
    "Agent",
    "CancelScope",
    "ClientCapabilityMissing",
    "ClientPeer",
    "CommandResult",
    "Compaction",
    "ElicitationAnswer",
    "Fallback",
    "InterSessionMessage",
    "LocalAccess",
    "McpConnections",
    "McpServerError",
    "McpTool",
    "McpToolResult",
    "MemorySessionStore",
    "PermissionDecision",
    "PostgresSessionStore",
    "ProviderSettings",
    "Session",
    "SessionAgent",
    "SessionBusy",
    "SessionChanges",
    "SessionLeases",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoredEvent",
    "Subagent",
    "ToolCallHandle",
    "Turn",
    "connect_agent",
    "default_store_path",
    "diff_content",
    "observe_store_batches",
    "open_store",
    "output_content",
    "run_agent",
    "serve_stdio",
    "terminal_content",
    "text_content",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acpstack.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"acpstack.agent.{module}"), name)
    globals()[name] = value
    return value
