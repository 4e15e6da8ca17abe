"""Entry points: spawn an agent process and connect a Client, or connect over any transport."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from acpstack.client._client import AgentPeer, Client
from acpstack.rpc import Connection, HandlerDispatcher
from acpstack.schema import PROTOCOL_VERSIONS
from acpstack.transports import StderrCallback, SubprocessTransport, Transport
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, ProtocolState


@dataclass
class ClientConnection:
    """A connected client: `agent` makes calls, `connection` is the runtime underneath."""

    agent: AgentPeer
    connection: Connection
    transport: Transport


def connect_client(
    client: Client,
    transport: Transport,
    *,
    unstable: bool = False,
    extensions: tuple[str, ...] = (),
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    framing: str = "auto",
    max_inbound_requests: int = 512,
    max_waiting_requests: int = 8192,
    protocol_versions: tuple[int, ...] = PROTOCOL_VERSIONS,
) -> ClientConnection:
    """Wire `client` to a transport. Start it with `async with conn.connection` (or `.start()`).

    `protocol_versions`: the ACP versions this client can go on in; which one it asks for
    is in its `initialize` (`ClientRuntime(protocol_version=2)` asks for the v2 draft)."""
    state = ProtocolState(
        "client",
        unstable=unstable,
        max_message_size=max_message_size,
        framing=framing,
        extensions=extensions,
        versions=protocol_versions,
    )
    if client.incoming_params:
        state.take_params_as(client.incoming_params)
    connection = Connection(
        transport,
        state,
        HandlerDispatcher(client),
        max_inbound_requests=max_inbound_requests,
        max_waiting_requests=max_waiting_requests,
        on_close=client.on_disconnect,
    )
    peer = AgentPeer(connection, extensions)
    client.on_connect(peer)
    return ClientConnection(peer, connection, transport)


@asynccontextmanager
async def spawn_agent(
    command: Sequence[str] | str,
    client: Client,
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    stderr_callback: StderrCallback | None = None,
    unstable: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    shutdown_timeout: float = 2.0,
) -> AsyncIterator[ClientConnection]:
    """Start an agent process and connect `client` to it; the agent is stopped on exit.

    If the agent dies, every pending call fails with `ConnectionClosed`, whose message
    has the exit code and the tail of the agent's stderr.
    """
    transport = await SubprocessTransport.spawn(
        command,
        env=env,
        inherit_env=inherit_env,
        cwd=cwd,
        stderr_callback=stderr_callback,
        shutdown_timeout=shutdown_timeout,
    )
    conn = connect_client(client, transport, unstable=unstable, max_message_size=max_message_size)
    async with conn.connection:
        yield conn
