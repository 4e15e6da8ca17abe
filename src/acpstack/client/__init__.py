"""The client side: implement `Client`, talk to the agent through `AgentPeer`."""

from acpstack.client._client import AgentPeer, Client, ProtocolVersionError
from acpstack.client._connect import ClientConnection, connect_client, spawn_agent

__all__ = ["AgentPeer", "Client", "ClientConnection", "ProtocolVersionError", "connect_client", "spawn_agent"]
