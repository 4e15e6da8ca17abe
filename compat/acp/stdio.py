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


@asynccontextmanager
async def spawn_agent_process(
    to_client: Callable[[Any], Any] | Any,
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    transport_kwargs: Mapping[str, Any] | None = None,
    **connection_kwargs: Any,
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """Start an agent and yield a client connection to it, with its process."""
    async with spawn_stdio_transport(
        command, *args, env=env, cwd=cwd, **dict(transport_kwargs or {})
    ) as (reader, writer, process):
        conn = ClientSideConnection(to_client, writer, reader, **connection_kwargs)
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
) -> AsyncIterator[tuple[AgentSideConnection, asyncio.subprocess.Process]]:
    """Start a client and yield an agent connection to it, with its process."""
    async with spawn_stdio_transport(
        command, *args, env=env, cwd=cwd, **dict(transport_kwargs or {})
    ) as (reader, writer, process):
        conn = AgentSideConnection(to_agent, writer, reader, **connection_kwargs)
        try:
            yield conn, process
        finally:
            await conn.close()
