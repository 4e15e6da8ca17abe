"""Entry points: serve an Agent on stdio, or connect it over any transport."""

from __future__ import annotations

import logging
import sys

from acpstack.agent._agent import Agent, AgentDispatcher, ClientPeer
from acpstack.rpc import Connection, run
from acpstack.transports import StdioError, Transport, open_stdio_transport
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, ProtocolState


def connect_agent(
    agent: Agent,
    transport: Transport,
    *,
    unstable: bool = False,
    extensions: tuple[str, ...] = (),
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    framing: str = "auto",
    max_inbound_requests: int = 512,
    max_waiting_requests: int = 8192,
) -> Connection:
    """Wire `agent` to a transport. Start it with `async with` (or `.start()`).

    `unstable=True` speaks ACP's unstable methods too; `extensions=("nes",)` adds the
    frozen `nes/*` and `document/*` methods (needs `unstable`)."""
    state = ProtocolState(
        "agent",
        unstable=unstable,
        max_message_size=max_message_size,
        framing=framing,
        extensions=extensions,
    )
    dispatcher = AgentDispatcher(agent)
    connection = Connection(
        transport,
        state,
        dispatcher,
        max_inbound_requests=max_inbound_requests,
        max_waiting_requests=max_waiting_requests,
        on_close=agent.on_disconnect,
    )
    dispatcher.connection = connection
    agent.on_connect(ClientPeer(connection, extensions))
    return connection


async def run_agent(
    agent: Agent, *, unstable: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> None:
    """Serve `agent` on this process's stdin/stdout until the client closes stdin.

    While serving, `print()` output is moved to stderr so it cannot corrupt the wire.
    """
    transport = await open_stdio_transport()
    connection = connect_agent(
        agent, transport, unstable=unstable, max_message_size=max_message_size
    )
    async with connection:
        await connection.wait_closed()


def serve_stdio(agent: Agent, *, unstable: bool = False, log_level: int | None = None) -> None:
    """Blocking convenience wrapper around `run_agent` for a script's `__main__`."""
    if log_level is not None:
        logging.basicConfig(level=log_level, stream=sys.stderr)
    try:
        run(run_agent(agent, unstable=unstable))
    except KeyboardInterrupt:
        pass
    except StdioError as exc:  # e.g. stdin closed: one clear line, no traceback
        sys.stderr.write(f"error: cannot serve ACP on stdio: {exc}\n")
        raise SystemExit(1) from None
