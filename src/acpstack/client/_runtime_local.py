"""What `ClientRuntime` does for the agent on this machine (a mixin): files and terminals
(`fs/*`, `terminal/*`, protocol v1 only), each inside the session's workspace, and the
output of a terminal for a UI (also of an agent's own terminal on v2)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from acpstack.local import FileSystem, TerminalExit, TerminalManager, TerminalOutput
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

if TYPE_CHECKING:
    from acpstack.client._runtime_sessions import ClientSession


class LocalWorkMethods:
    """The `fs/*` and `terminal/*` handlers of `ClientRuntime`, over its `fs` and
    `terminals`, inside each session's workspace."""

    enable_fs: bool
    enable_terminal: bool
    fs: FileSystem
    terminals: TerminalManager
    sessions: dict[str, ClientSession]
    released_terminals: dict[str, TerminalOutput]

    if TYPE_CHECKING:  # what ClientRuntime provides (declared for the type checker only)

        def _session(self, session_id: str) -> ClientSession: ...

    def terminal_snapshot(self, session_id: str, terminal_id: str) -> TerminalOutput | None:
        """A terminal's output so far, also after the agent released it (for UIs)."""
        try:
            return self.terminals.output(session_id, terminal_id)
        except RequestError:
            pass
        session = self.sessions.get(session_id)
        shown = session.state.agent_terminals.get(terminal_id) if session is not None else None
        if shown is not None:  # v2: a terminal the agent runs and shows
            status = TerminalExit(shown.exit_code, shown.signal) if shown.exited else None
            text = shown.output.decode("utf-8", "replace")
            return TerminalOutput(output=text, truncated=False, exit_status=status)
        return self.released_terminals.get(terminal_id)

    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        """`fs/read_text_file` inside the session's workspace (-32601 when `enable_fs` is off;
        -32602 for a path outside it, a missing or binary file)."""
        if not self.enable_fs:
            raise RequestError.method_not_found("fs/read_text_file")
        workspace = self._session(params.session_id).workspace
        line = params.line if isinstance(params.line, int) else None
        limit = params.limit if isinstance(params.limit, int) else None
        return acp.ReadTextFileResponse(
            content=await self.fs.read_text_file(workspace, params.path, line, limit)
        )

    async def fs_write_text_file(
        self, params: acp.WriteTextFileRequest
    ) -> acp.WriteTextFileResponse:
        """`fs/write_text_file`: an atomic write inside the session's workspace (-32601 when
        `enable_fs` is off; -32602 for a path outside it)."""
        if not self.enable_fs:
            raise RequestError.method_not_found("fs/write_text_file")
        workspace = self._session(params.session_id).workspace
        await self.fs.write_text_file(workspace, params.path, params.content)
        return acp.WriteTextFileResponse()

    async def terminal_create(
        self, params: acp.CreateTerminalRequest
    ) -> acp.CreateTerminalResponse:
        """`terminal/create`: start the command without a shell, in its own process group, in
        `cwd` (inside the workspace) or the session's first root (-32601 when
        `enable_terminal` is off)."""
        if not self.enable_terminal:
            raise RequestError.method_not_found("terminal/create")
        session = self._session(params.session_id)
        cwd = (
            str(session.workspace.check(params.cwd))
            if isinstance(params.cwd, str)
            else str(session.workspace.roots[0])
        )
        env = {v.name: v.value for v in params.env} if isinstance(params.env, list) else None
        terminal_id = await self.terminals.create(
            params.session_id,
            params.command,
            list(params.args) if isinstance(params.args, list) else [],
            env=env,
            cwd=cwd,
            output_byte_limit=params.output_byte_limit
            if isinstance(params.output_byte_limit, int)
            else None,
        )
        return acp.CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, params: acp.TerminalOutputRequest
    ) -> acp.TerminalOutputResponse:
        """`terminal/output`: the output kept so far, and the exit status once it exited."""
        out = self.terminals.output(params.session_id, params.terminal_id)
        result = acp.TerminalOutputResponse(output=out.output, truncated=out.truncated)
        if out.exit_status is not None:
            result.exit_status = acp.TerminalExitStatus(
                exit_code=out.exit_status.exit_code, signal=out.exit_status.signal
            )
        return result

    async def terminal_wait_for_exit(
        self, params: acp.WaitForTerminalExitRequest
    ) -> acp.WaitForTerminalExitResponse:
        """`terminal/wait_for_exit`: wait until the command exits; its exit code or signal."""
        status = await self.terminals.wait_for_exit(params.session_id, params.terminal_id)
        return acp.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_kill(self, params: acp.KillTerminalRequest) -> acp.KillTerminalResponse:
        """`terminal/kill`: kill the command and its process group (the terminal stays)."""
        await self.terminals.kill(params.session_id, params.terminal_id)
        return acp.KillTerminalResponse()

    async def terminal_release(
        self, params: acp.ReleaseTerminalRequest
    ) -> acp.ReleaseTerminalResponse:
        """`terminal/release`: kill the command if it runs and forget it; its last output
        stays available to `terminal_snapshot` (for a UI that shows it)."""
        # Keep the final output: a UI still shows a terminal embedded in a tool call after release.
        with contextlib.suppress(RequestError):
            self.released_terminals[params.terminal_id] = self.terminals.output(
                params.session_id, params.terminal_id
            )
            while len(self.released_terminals) > 64:
                self.released_terminals.pop(next(iter(self.released_terminals)))
        await self.terminals.release(params.session_id, params.terminal_id)
        return acp.ReleaseTerminalResponse()


__all__ = ["LocalWorkMethods"]
