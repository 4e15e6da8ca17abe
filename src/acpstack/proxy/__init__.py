"""Proxy chains (ACP's proxy-chains RFD): a conductor that runs Client → Proxy₀ … Proxyₙ →
Agent and looks like one agent to its client, and `Proxy`, the base class of a component
that changes only what it overrides (and may offer the agent MCP tools over ACP). A `Proxy`
object (or `load_proxy("file.py")`) in a conductor's chain runs in the conductor's process."""

from acpstack.proxy._conductor import ChainEnded, Conductor, conduct_stdio
from acpstack.proxy._inprocess import load_proxy
from acpstack.proxy._proxy import Proxy, tool

__all__ = ["ChainEnded", "Conductor", "Proxy", "conduct_stdio", "load_proxy", "tool"]
