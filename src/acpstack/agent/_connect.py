"""Entry points: serve an Agent on stdio, or connect it over any transport."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from acpstack.agent._agent import Agent, ClientPeer
from acpstack.rpc import Connection, HandlerDispatcher, run
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
    protocol_versions: tuple[int, ...] | None = None,
) -> Connection:
    """Wire `agent` to a transport. Start it with `async with` (or `.start()`).

    `unstable=True` speaks ACP's unstable methods too; `extensions=("nes",)` adds the
    frozen `nes/*` and `document/*` methods (needs `unstable`). `protocol_versions`: the
    ACP versions offered to the client (default: `agent.protocol_versions`); `initialize`
    picks the highest one at or below what the client asks for."""
    state = ProtocolState(
        "agent",
        unstable=unstable,
        max_message_size=max_message_size,
        framing=framing,
        extensions=extensions,
        versions=protocol_versions or agent.protocol_versions,
    )
    dispatcher = HandlerDispatcher(agent)
    connection = Connection(
        transport,
        state,
        dispatcher,
        max_inbound_requests=max_inbound_requests,
        max_waiting_requests=max_waiting_requests,
        on_close=agent.on_disconnect,
    )
    agent.on_connect(ClientPeer(connection, extensions))
    return connection


TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


async def run_agent(
    agent: Agent, *, unstable: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> int | None:
    """Serve `agent` on this process's stdin/stdout until the client closes stdin, or until
    SIGTERM or SIGHUP; returns the number of the signal that ended it (None at EOF).

    Either way the connection closes as usual: running turns are cancelled, and everything
    the agent started for its sessions (commands it ran itself, MCP servers) is ended.
    While serving, `print()` output is moved to stderr so it cannot corrupt the wire.
    """
    transport = await open_stdio_transport()
    connection = connect_agent(
        agent, transport, unstable=unstable, max_message_size=max_message_size
    )
    loop = asyncio.get_running_loop()
    received: list[int] = []
    signalled = asyncio.Event()

    def on_signal(sig: int) -> None:
        received.append(sig)
        signalled.set()

    handled = []
    for sig in TERMINATING_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
            handled.append(sig)
    try:
        async with connection:  # leaving it closes the connection: the usual cleanup
            await _first_of(connection.wait_closed(), signalled.wait())
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    return received[0] if received else None


async def _first_of(*waits: Coroutine[Any, Any, Any]) -> None:
    """Wait until one of `waits` is done; the others are cancelled and awaited."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def serve_stdio(agent: Agent, *, unstable: bool = False, log_level: int | None = None) -> None:
    """Blocking convenience wrapper around `run_agent` for a script's `__main__`."""
    if log_level is not None:
        logging.basicConfig(level=log_level, stream=sys.stderr)
    try:
        ended_by = run(run_agent(agent, unstable=unstable))
    except KeyboardInterrupt:
        return
    except StdioError as exc:  # e.g. stdin closed: one clear line, no traceback
        sys.stderr.write(f"error: cannot serve ACP on stdio: {exc}\n")
        raise SystemExit(1) from None
    if ended_by is not None:
        raise SystemExit(128 + ended_by)  # the shell's convention for "ended by a signal"
