"""Starting the agent behind one remote connection: a Python `Agent` in this process, or a
stdio agent command in its own process. Either way the server talks to it over a
Transport, so everything after this point is the same for both."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence

from acpstack.agent import Agent, SessionAgent, connect_agent
from acpstack.rpc import Connection
from acpstack.server._pipe import pipe_pair
from acpstack.transports import SubprocessTransport, Transport

log = logging.getLogger("acpstack.server")

PRINCIPAL_ENV = "ACPSTACK_PRINCIPAL"
AgentFactory = Callable[[], Agent]
AgentSource = AgentFactory | Sequence[str] | str


class AgentLink:
    """The server's end of one agent, and how to stop that agent."""

    def __init__(
        self, transport: Transport, connection: Connection | None, description: str
    ) -> None:
        self.transport = transport
        self._connection = connection
        self.description = description

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()  # cancels the agent's handlers, calls on_disconnect
        await self.transport.close()  # a process gets the shutdown ladder: EOF, SIGTERM, SIGKILL


async def start_agent(
    source: AgentSource,
    *,
    label: str,
    unstable: bool,
    max_message_size: int,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    principal: str | None = None,
) -> AgentLink:
    """`principal` (whose token opened the connection) becomes a `SessionAgent`'s
    `principal` (its sessions are theirs alone), or a process's `ACPSTACK_PRINCIPAL`."""
    if callable(source):
        return _start_in_process(
            source, unstable=unstable, max_message_size=max_message_size, principal=principal
        )
    if principal is not None:
        env = {**(env or {}), PRINCIPAL_ENV: principal}  # on top of ours
    transport = await SubprocessTransport.spawn(
        source, cwd=cwd, env=env, stderr_callback=lambda line: log.info("agent %s: %s", label, line)
    )
    return AgentLink(transport, None, f"process {transport.pid}")


def _start_in_process(
    factory: AgentFactory, *, unstable: bool, max_message_size: int, principal: str | None
) -> AgentLink:
    ours, theirs = pipe_pair(at_once=True)  # no loop turn between the server and the agent
    agent = factory()
    if isinstance(agent, SessionAgent):
        agent.principal = principal
    connection = connect_agent(
        agent, theirs, unstable=unstable, max_message_size=max_message_size, framing="ndjson"
    )
    connection.start()
    return AgentLink(ours, connection, type(agent).__name__)
