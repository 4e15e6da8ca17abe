"""An Agent and a Client connected in one process, for tests and experiments."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from acpstack.agent import Agent, connect_agent
from acpstack.client import AgentPeer, Client, connect_client
from acpstack.rpc import Connection
from acpstack.transports import memory_pair


@dataclass
class ConnectedPair:
    """`agent` is the handle the client uses to call the agent; both connections are live."""

    agent: AgentPeer
    """The client side's handle to the agent: call `initialize`, `session_new`..."""
    agent_connection: Connection
    """The agent side's connection."""
    client_connection: Connection
    """The client side's connection."""


@contextlib.asynccontextmanager
async def connected_pair(
    agent: Agent, client: Client, *, unstable: bool = False
) -> AsyncIterator[ConnectedPair]:
    """Connect `agent` and `client` over an in-memory pipe; both are closed on exit.

    Messages still go through framing, validation and the full runtime on both sides,
    only the operating system pipe is missing. Nothing is sent until you call the agent:
    `initialize` first, as over a real pipe. `unstable` switches ACP's unstable methods
    on for both sides.
    """
    agent_side, client_side = memory_pair()
    agent_conn = connect_agent(agent, agent_side, unstable=unstable)
    client_conn = connect_client(client, client_side, unstable=unstable)
    async with agent_conn, client_conn.connection:
        yield ConnectedPair(client_conn.agent, agent_conn, client_conn.connection)
