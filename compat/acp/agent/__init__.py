"""`acp.agent`, as upstream: the agent's connection class."""

from acp.core import AgentSideConnection

__all__ = ["AgentSideConnection"]
