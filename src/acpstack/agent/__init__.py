"""The agent side: implement `Agent` (or `SessionAgent`), talk to the client through `ClientPeer`."""

from acpstack.agent._agent import Agent, ClientPeer
from acpstack.agent._connect import connect_agent, run_agent, serve_stdio
from acpstack.agent._runtime import SessionAgent
from acpstack.agent._session import Session
from acpstack.agent._store import (
    MemorySessionStore,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
    StoredEvent,
    default_store_path,
)
from acpstack.agent._turn import (
    STANDARD_OPTIONS,
    ClientCapabilityMissing,
    CommandResult,
    PermissionDecision,
    ToolCallHandle,
    Turn,
    diff_content,
    terminal_content,
    text_content,
)

__all__ = [
    "STANDARD_OPTIONS",
    "Agent",
    "ClientCapabilityMissing",
    "ClientPeer",
    "CommandResult",
    "MemorySessionStore",
    "PermissionDecision",
    "Session",
    "SessionAgent",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoredEvent",
    "ToolCallHandle",
    "Turn",
    "connect_agent",
    "default_store_path",
    "diff_content",
    "run_agent",
    "serve_stdio",
    "terminal_content",
    "text_content",
]
