"""The steps of a command (create, wait for exit, kill, output, release), so that
`Turn.run_command` runs a command one way whether a client terminal runs it or the agent
itself (`LocalAccess` has the same steps)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from acpstack.local import TerminalExit, TerminalOutput
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer


class Terminals(Protocol):
    """The steps of a command, the same through the client and in the agent's process."""

    async def create(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> str: ...

    async def wait_for_exit(self, terminal_id: str) -> None: ...

    async def kill(self, terminal_id: str) -> None: ...

    async def output(self, terminal_id: str) -> TerminalOutput: ...

    async def release(self, terminal_id: str) -> None: ...


LATE_ANSWER_SECONDS = 10.0
"""How long a cancelled command waits for the client's answer to `terminal/create`."""

_late_releases: set[asyncio.Future[None]] = set()
"""Late releases whose caller was cancelled again: held here (asyncio keeps only weak
references to tasks) until each ends by itself (`ClientTerminals._release_late`)."""


class ClientTerminals:
    """`terminal/*` on the client (raises `CapabilityError` when it offers no terminals)."""

    def __init__(self, client: ClientPeer, session_id: str) -> None:
        self.client = client
        self.sid = session_id

    async def create(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        params = acp.CreateTerminalRequest(session_id=self.sid, command=command, args=list(args))
        if cwd is not None:
            params.cwd = cwd
        if env:
            params.env = [acp.EnvVariable(name=k, value=v) for k, v in env.items()]
        if output_byte_limit is not None:
            params.output_byte_limit = output_byte_limit
        request = asyncio.ensure_future(self.client.terminal_create(params))
        try:
            created = await asyncio.shield(request)
        except asyncio.CancelledError:
            # The release runs to its end even when the caller is cancelled again while
            # it waits for it: the caller then ends at once, the release goes on.
            release = asyncio.ensure_future(self._release_late(request))
            _late_releases.add(release)
            release.add_done_callback(_late_releases.discard)
            await asyncio.shield(release)
            raise
        terminal_id: str = created.terminal_id
        return terminal_id

    async def _release_late(self, request: asyncio.Future[acp.CreateTerminalResponse]) -> None:
        """Cancelled while `terminal/create` was on its way: the client creates it anyway
        (cancelling a request is only a wish), so wait a moment for its answer and release
        that terminal, rather than leave a process running in the client. Ends by itself:
        within `LATE_ANSWER_SECONDS` plus the release, or when the connection closes (which
        fails both requests)."""
        try:
            created = await asyncio.wait_for(asyncio.shield(request), LATE_ANSWER_SECONDS)
        except asyncio.CancelledError:  # only the loop's own shutdown cancels this task
            request.cancel()  # sends $/cancel_request if it is still pending
            raise
        except Exception:  # no answer in time, or an error: give up
            request.cancel()
            return
        with contextlib.suppress(Exception):
            await self.release(created.terminal_id)

    async def wait_for_exit(self, terminal_id: str) -> None:
        await self.client.terminal_wait_for_exit(
            acp.WaitForTerminalExitRequest(session_id=self.sid, terminal_id=terminal_id)
        )

    async def kill(self, terminal_id: str) -> None:
        await self.client.terminal_kill(
            acp.KillTerminalRequest(session_id=self.sid, terminal_id=terminal_id)
        )

    async def output(self, terminal_id: str) -> TerminalOutput:
        out = await self.client.terminal_output(
            acp.TerminalOutputRequest(session_id=self.sid, terminal_id=terminal_id)
        )
        status = out.exit_status
        exit_status = None
        if isinstance(status, acp.TerminalExitStatus):
            exit_status = TerminalExit(
                exit_code=status.exit_code if isinstance(status.exit_code, int) else None,
                signal=status.signal if isinstance(status.signal, str) else None,
            )
        return TerminalOutput(output=out.output, truncated=out.truncated, exit_status=exit_status)

    async def release(self, terminal_id: str) -> None:
        await self.client.terminal_release(
            acp.ReleaseTerminalRequest(session_id=self.sid, terminal_id=terminal_id)
        )


__all__ = ["ClientTerminals", "Terminals"]
