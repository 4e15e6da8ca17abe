"""The client side: implement `Client` (or use `ClientRuntime`), talk to the agent through `AgentPeer`.

`FileSystem`, `Workspace` and the terminal names live in `acpstack.local` (shared with
agents); they are re-exported here unchanged.
Agents run as a subprocess (`spawn_agent`), on any transport (`connect_client`), or remotely over
streamable HTTP or WebSocket (`connect_remote`, `connect_http`, `connect_websocket`; the `remote` extra),
which fail over to another server behind the same URL with `reconnect=True`.
"""

from acpstack.client._client import AgentPeer, Client, ProtocolVersionError
from acpstack.client._connect import ClientConnection, connect_client, spawn_agent
from acpstack.client._elicitation import (
    AskElicitation,
    DeclineElicitations,
    ElicitationPolicy,
    ElicitationReply,
    ElicitationRule,
    ElicitationRules,
)
from acpstack.client._failover import FailoverTransport
from acpstack.client._failover_policy import Failover, FailoverEvent, is_connection_lost
from acpstack.client._permissions import AskUser, DenyAll, PermissionPolicy, Rule, Rules
from acpstack.client._remote import (
    connect_http,
    connect_remote,
    connect_websocket,
    reattach_session,
    reconnect,
)
from acpstack.client._runtime import ClientRuntime, ClientSession
from acpstack.client._state import Message, SessionState, ToolCallState, update_kind
from acpstack.events import UPDATE_KINDS, UpdateDispatch, UpdateKind
from acpstack.local import FileSystem, TerminalExit, TerminalManager, TerminalOutput, Workspace

__all__ = [
    "UPDATE_KINDS",
    "AgentPeer",
    "AskElicitation",
    "AskUser",
    "Client",
    "ClientConnection",
    "ClientRuntime",
    "ClientSession",
    "DeclineElicitations",
    "DenyAll",
    "ElicitationPolicy",
    "ElicitationReply",
    "ElicitationRule",
    "ElicitationRules",
    "Failover",
    "FailoverEvent",
    "FailoverTransport",
    "FileSystem",
    "Message",
    "PermissionPolicy",
    "ProtocolVersionError",
    "Rule",
    "Rules",
    "SessionState",
    "TerminalExit",
    "TerminalManager",
    "TerminalOutput",
    "ToolCallState",
    "UpdateDispatch",
    "UpdateKind",
    "Workspace",
    "connect_client",
    "connect_http",
    "connect_remote",
    "connect_websocket",
    "is_connection_lost",
    "reattach_session",
    "reconnect",
    "spawn_agent",
    "update_kind",
]
