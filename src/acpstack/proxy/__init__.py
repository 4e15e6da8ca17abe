"""Proxy chains (ACP's proxy-chains RFD): a conductor that runs Client → Proxy₀ … Proxyₙ →
Agent and looks like one agent to its client, and `Proxy`, the base class of a component
that changes only what it overrides (and may offer the agent MCP tools over ACP)."""

from acpstack.proxy._conductor import ChainEnded, Conductor, conduct_stdio
from acpstack.proxy._proxy import Proxy, tool

__all__ = ["ChainEnded", "Conductor", "Proxy", "conduct_stdio", "tool"]
