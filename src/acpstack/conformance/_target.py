"""The agent under test: a command run on stdio, or a remote URL; one connection to it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpstack.conformance._client_sim import SimulatedClient
from acpstack.conformance._probe import Probe, ProbeLog, Reply
from acpstack.conformance._schema import MessageValidator
from acpstack.transports import SubprocessTransport, Transport


class TargetUnavailable(RuntimeError):
    """The agent could not be started or reached at all."""


@dataclass(frozen=True)
class AgentTarget:
    """How to reach the agent: `command` (argv, run on stdio) or `url` (remote ACP).

    Raises:
        ValueError: Neither or both of `command` and `url` are given.
    """

    command: tuple[str, ...] = ()
    """The agent's argv; every connection starts a new process."""
    url: str | None = None
    """A remote agent: http(s):// (streamable HTTP) or ws(s):// (WebSocket)."""
    env: dict[str, str] | None = None
    """Variables added to the agent process's environment."""
    token: str | None = None
    """Remote only: sent as a bearer token."""
    cwd: Path | None = None
    """The directory the agent process runs in (None: the current directory when a
    connection opens), so a relative command (`./agent`, `python agent.py`, `uv run ...`)
    means what it means in a shell there. The sessions' `cwd` is another matter: each case
    gives its sessions a scratch workspace."""

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ValueError("give the agent either a command or a URL")

    @property
    def remote(self) -> bool:
        """Whether the agent is reached over a URL."""
        return self.url is not None

    def describe(self) -> str:
        """The URL, or the command line, for reports."""
        return self.url if self.url is not None else " ".join(self.command)

    async def open(self, *, shutdown_timeout: float) -> Transport:
        """A new connection to the agent: a new process running in `cwd` (ended by the
        transport's `close`, see `SubprocessTransport`), or a remote transport (already
        connected for WebSocket). Raises `TargetUnavailable` when the agent cannot be
        started or reached."""
        try:
            if self.url is None:
                return await SubprocessTransport.spawn(
                    list(self.command),
                    env=self.env,
                    cwd=self.cwd or Path.cwd(),
                    shutdown_timeout=shutdown_timeout,
                    stderr_tail_lines=40,
                )
            return await self._open_remote()
        except (OSError, ValueError) as exc:
            raise TargetUnavailable(f"cannot start the agent `{self.describe()}`: {exc}") from None

    async def _open_remote(self) -> Transport:
        import acpstack.transports as transports

        assert self.url is not None
        if self.url.split(":", 1)[0].lower() in ("ws", "wss"):
            socket = transports.WebSocketClientTransport(self.url, token=self.token, timeout=10)
            try:
                await socket.connect()
            except transports.RemoteError as exc:
                raise TargetUnavailable(str(exc)) from None
            return socket
        return transports.HttpClientTransport(self.url, token=self.token, timeout=10)


@dataclass
class Connection:
    """One connection to the agent, with the probe that records and answers on it."""

    target: AgentTarget
    client: SimulatedClient
    probe: Probe
    transport: Transport
    initialize: dict[str, Any] = field(default_factory=dict)  # the initialize result
    exited_on_eof: bool | None = None
    exit_seconds: float | None = None
    startup_timeout: float = 0.0
    """The longest wait for the agent's first answer on this connection (its start-up)."""

    @property
    def log(self) -> ProbeLog:
        return self.probe.log

    @property
    def alive(self) -> bool:
        if self.probe.closed.is_set():
            return False
        code = getattr(self.transport, "returncode", None)
        return code is None

    def stderr_tail(self) -> list[str]:
        tail = getattr(self.transport, "stderr_tail", None)
        return list(tail()[-10:]) if callable(tail) else []

    def exit_description(self) -> str:
        reason = self.transport.close_reason()
        return reason or "the agent closed the connection"

    async def request(self, method: str, params: Any, *, timeout: float) -> Reply:
        """Send a request and wait for its answer; until the agent has written anything
        at all, the wait is the start-up allowance when that is longer."""
        if not self.probe.heard_from_peer:
            timeout = max(timeout, self.startup_timeout)
        return await self.probe.request(method, params, timeout=timeout)

    async def close(self, *, eof_grace: float) -> None:
        """Close stdin and see whether the agent leaves by itself within `eof_grace`
        (then the transport's ladder: SIGTERM, SIGKILL). Remote: just disconnect."""
        wait_exit = getattr(self.transport, "wait_exit", None)
        if wait_exit is None:
            await self.probe.close()
            return
        began = time.monotonic()
        closing = asyncio.get_running_loop().create_task(self.probe.close())
        try:
            async with asyncio.timeout(eof_grace):
                code = await wait_exit()
            self.exit_seconds = time.monotonic() - began
            self.exited_on_eof = code >= 0
        except TimeoutError:
            self.exited_on_eof = False
        with contextlib.suppress(Exception):
            await closing


async def open_connection(
    target: AgentTarget,
    client: SimulatedClient,
    validator: MessageValidator | None,
    *,
    shutdown_timeout: float,
    startup_timeout: float = 0.0,
) -> Connection:
    transport = await target.open(shutdown_timeout=shutdown_timeout)
    probe = Probe(transport, client, validator)
    probe.start()
    return Connection(target, client, probe, transport, startup_timeout=startup_timeout)
