"""Processes and streams: spawn an agent (or a client) and talk to it over its stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp.core import AgentSideConnection, ClientSideConnection

__all__ = [
    "default_environment",
    "spawn_agent_process",
    "spawn_client_process",
    "spawn_stdio_transport",
    "stdio_streams",
]

# Passed on to a child by default: what a program needs to start, nothing secret.
_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")


def default_environment() -> dict[str, str]:
    """The environment a spawned peer gets when none is given."""
    return {k: v for k, v in os.environ.items() if k in _INHERITED}


async def stdio_streams(
    limit: int | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """(reader of stdin, writer to stdout) as asyncio streams."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit or 2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer


@asynccontextmanager
async def spawn_stdio_transport(
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    limit: int | None = None,
    **_: Any,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.subprocess.Process]]:
    """Start `command` with pipes; yields (its stdout, its stdin, the process); ends it on exit."""
    merged = dict(default_environment())
    merged.update(env or {})
    process = await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=merged,
        cwd=str(cwd) if cwd is not None else None,
        limit=limit or 2**26,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        yield process.stdout, process.stdin, process
    finally:
        if process.returncode is None:
            if not process.stdin.is_closing():
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 2)
            except TimeoutError:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 2)
                except TimeoutError:
                    process.kill()
                    await process.wait()


class _Process:
    """What the official API hands out as the process: pid, returncode, wait()."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    @property
    def pid(self) -> int:
        return int(self._transport.pid)

    @property
    def returncode(self) -> int | None:
        return self._transport.returncode  # type: ignore[no-any-return]

    async def wait(self) -> int:
        return await self._transport.wait_exit()  # type: ignore[no-any-return]


@asynccontextmanager
async def _spawn(
    command: str, args: tuple[str, ...], env: Mapping[str, str] | None, cwd: str | Path | None
) -> AsyncIterator[tuple[Any, _Process]]:
    """acpstack's push-based subprocess transport (its stderr goes to ours, its shutdown
    closes stdin, then terminates, then kills its process group)."""
    from acpstack.transports import SubprocessTransport

    merged = dict(default_environment())
    merged.update(env or {})
    transport = await SubprocessTransport.spawn(
        [command, *args],
        env=merged,
        inherit_env=False,
        cwd=cwd,
        stderr_callback=lambda line: print(line, file=sys.stderr),  # noqa: T201
    )
    yield transport, _Process(transport)


@asynccontextmanager
async def spawn_agent_process(
    to_client: Callable[[Any], Any] | Any,
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    transport_kwargs: Mapping[str, Any] | None = None,
    **connection_kwargs: Any,
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """Start an agent and yield a client connection to it, with its process."""
    async with _spawn(command, args, env, cwd) as (transport, process):
        conn = ClientSideConnection(to_client, transport, **connection_kwargs)
        try:
            yield conn, process
        finally:
            await conn.close()


@asynccontextmanager
async def spawn_client_process(
    to_agent: Callable[[Any], Any] | Any,
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    transport_kwargs: Mapping[str, Any] | None = None,
    **connection_kwargs: Any,
) -> AsyncIterator[tuple[AgentSideConnection, Any]]:
    """Start a client and yield an agent connection to it, with its process."""
    async with _spawn(command, args, env, cwd) as (transport, process):
        conn = AgentSideConnection(to_agent, transport, **connection_kwargs)
        try:
            yield conn, process
        finally:
            await conn.close()
