"""acpstack: the Agent Client Protocol stack for Python.

The main names are importable from here; they load on first use so that
`import acpstack` stays cheap (an agent's cold start matters to editors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpstack._version import __version__

_EXPORTS = {
    "Agent": "acpstack.agent",
    "ClientPeer": "acpstack.agent",
    "connect_agent": "acpstack.agent",
    "run_agent": "acpstack.agent",
    "serve_stdio": "acpstack.agent",
    "Client": "acpstack.client",
    "AgentPeer": "acpstack.client",
    "ClientConnection": "acpstack.client",
    "connect_client": "acpstack.client",
    "spawn_agent": "acpstack.client",
    "ProtocolVersionError": "acpstack.client",
    "Connection": "acpstack.rpc",
    "ConnectionClosed": "acpstack.rpc",
    "RequestTimeout": "acpstack.rpc",
    "run": "acpstack.rpc",
    "RequestError": "acpstack.wire",
    "CapabilityError": "acpstack.wire",
    "UNSET": "acpstack.schema",
    "PROTOCOL_VERSION": "acpstack.schema",
}

__all__ = [
    "PROTOCOL_VERSION",
    "UNSET",
    "Agent",
    "AgentPeer",
    "CapabilityError",
    "Client",
    "ClientConnection",
    "ClientPeer",
    "Connection",
    "ConnectionClosed",
    "ProtocolVersionError",
    "RequestError",
    "RequestTimeout",
    "__version__",
    "connect_agent",
    "connect_client",
    "run",
    "run_agent",
    "serve_stdio",
    "spawn_agent",
]

if TYPE_CHECKING:
    from acpstack.agent import Agent, ClientPeer, connect_agent, run_agent, serve_stdio
    from acpstack.client import (
        AgentPeer,
        Client,
        ClientConnection,
        ProtocolVersionError,
        connect_client,
        spawn_agent,
    )
    from acpstack.rpc import Connection, ConnectionClosed, RequestTimeout, run
    from acpstack.schema import PROTOCOL_VERSION, UNSET
    from acpstack.wire import CapabilityError, RequestError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'acpstack' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
