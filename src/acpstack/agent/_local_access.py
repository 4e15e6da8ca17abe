"""File and command work an agent does itself, for a client that does not offer it.

Capabilities are optional in ACP: many clients advertise neither `fs` nor `terminal`. The
`Turn` helpers then either refuse (policy ``"refuse"``) or use a `LocalAccess` (policy
``"local"``): the same code the client runtime serves ``fs/*`` and ``terminal/*`` with
(`acpstack.local`), applied on the agent's machine inside the session's roots (its cwd
and additional directories). Paths are resolved race-free and refused when they lead
outside the roots (symlinks included); commands run without a shell in their own
process group, in the session's cwd unless told otherwise (inside the roots too), and
are ended with whatever they started when they are killed or released.

One `LocalAccess` belongs to one session; the `SessionAgent` runtime closes it when the
session closes, is deleted or reopened, or the client disconnects, which ends every
command still running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from acpstack.local import FileSystem, TerminalManager, TerminalOutput, Workspace

Fallback = Literal["local", "refuse"]
"""What the `Turn` helpers do when the client does not offer `fs` or `terminal`:
``"local"`` does the work in the agent's process, ``"refuse"`` fails it
(`ClientCapabilityMissing`)."""


class LocalAccess:
    """One session's files and commands, handled by the agent itself.

    The terminal steps mirror ``terminal/*`` (create, wait for exit, kill, output,
    release) so that `Turn.run_command` runs a command the same way either side.
    """

    def __init__(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] = (),
        *,
        max_terminals: int = 16,
    ) -> None:
        self.session_id = session_id
        self._roots = (cwd, tuple(additional_directories))
        self._max_terminals = max_terminals
        # Made when first needed: most clients offer fs and terminals, so most sessions
        # never use them (and each open session's memory counts).
        self._workspace: Workspace | None = None
        self._fs: FileSystem | None = None
        self._terminals: TerminalManager | None = None

    @property
    def workspace(self) -> Workspace:
        """The session's roots, resolved (and pinned) when first used."""
        if self._workspace is None:
            cwd, additional = self._roots
            self._workspace = Workspace(cwd, additional)
        return self._workspace

    @property
    def terminals(self) -> TerminalManager:
        """The session's commands (made when first used)."""
        if self._terminals is None:
            self._terminals = TerminalManager(max_terminals=self._max_terminals)
        return self._terminals

    # -- files -------------------------------------------------------------------------

    @property
    def _files(self) -> FileSystem:
        if self._fs is None:
            self._fs = FileSystem()
        return self._fs

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        """The text of a file inside the roots, or `limit` lines of it from 1-based `line`
        (`RequestError` for a path outside the roots, a missing or binary file)."""
        return await self._files.read_text_file(self.workspace, path, line, limit)

    async def write_text_file(self, path: str, content: str) -> None:
        """Atomically replace (or create) a file inside the roots, with its missing parent
        directories."""
        await self._files.write_text_file(self.workspace, path, content)

    # -- terminals ---------------------------------------------------------------------

    async def create(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        """Start the command; its working directory must lie inside the roots."""
        workspace = self.workspace
        where = str(workspace.check(cwd)) if cwd is not None else str(workspace.roots[0])
        return await self.terminals.create(
            self.session_id,
            command,
            args,
            env=env,
            cwd=where,
            output_byte_limit=output_byte_limit,
        )

    async def wait_for_exit(self, terminal_id: str) -> None:
        """Wait until the command exits (at once if it has); `output` then has its status."""
        await self.terminals.wait_for_exit(self.session_id, terminal_id)

    async def kill(self, terminal_id: str) -> None:
        """Kill the command and its process group; its output stays readable."""
        await self.terminals.kill(self.session_id, terminal_id)

    async def output(self, terminal_id: str) -> TerminalOutput:
        """The output kept so far, and the exit status once the command exited."""
        return self.terminals.output(self.session_id, terminal_id)

    async def release(self, terminal_id: str) -> None:
        """Kill the command if it still runs and forget it."""
        await self.terminals.release(self.session_id, terminal_id)

    async def aclose(self) -> None:
        """End every command still running and wait until they are gone; start no more."""
        await self.terminals.aclose()


__all__ = ["Fallback", "LocalAccess"]
