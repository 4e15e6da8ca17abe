"""The agent side: implement `Agent`, talk to the client through `ClientPeer`."""

from acpstack.agent._agent import Agent, ClientPeer
from acpstack.agent._connect import connect_agent, run_agent, serve_stdio

__all__ = ["Agent", "ClientPeer", "connect_agent", "run_agent", "serve_stdio"]
