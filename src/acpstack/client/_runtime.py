"""`ClientRuntime`: a complete ACP client that does the real work.

Real files (inside each session's workspace), real terminals, permission policies, the
session state built from `session/update`, and the authentication flow. Use it as the
`client` of `spawn_agent` / `connect_client`, then drive the agent with its methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from msgspec import UNSET

from acpstack._version import __version__
from acpstack.client._elicitation import (
    AskElicitation,
    DeclineElicitations,
    ElicitationAsk,
    ElicitationPolicy,
)
from acpstack.client._mcp_host import McpHost
from acpstack.client._permissions import (
    AskCallback,
    AskUser,
    DenyAll,
    PermissionPolicy,
    reject_option,
)
from acpstack.client._runtime_unstable import AuthStatusCallback, RuntimeExtras
from acpstack.client._state import SessionState
from acpstack.local import (
    BufferProvider,
    FileSystem,
    TerminalManager,
    TerminalOutput,
    Workspace,
    WriteObserver,
)
from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import AUTH_REQUIRED, DroppedMessage, RequestError

log = logging.getLogger("acpstack.client")
T = TypeVar("T")

UpdateCallback = Callable[[str, "acp.SessionUpdate"], None]
DroppedCallback = Callable[[DroppedMessage], None]
AuthChooser = Callable[[list["acp.AuthMethod"]], Awaitable["str | None"]]


@dataclass
class ClientSession:
    """What the client keeps per session: its workspace, state and pending permission asks."""

    session_id: str
    workspace: Workspace
    state: SessionState
    pending_permissions: set[asyncio.Task[acp.PermissionOption | None]] = field(default_factory=set)
    pending_elicitations: set[asyncio.Task[Any]] = field(default_factory=set)


class ClientRuntime(RuntimeExtras):
    """A ready-to-use client. Everything the agent asks for is checked and done for real.

    - fs: absolute paths only, inside the session's cwd/additionalDirectories unless the
      user widened the boundary (`extra_roots`, `unrestricted_fs`); atomic writes.
    - terminals: real processes, byte limits, process-group kill, all released when the
      session closes or the connection ends.
    - permissions: `permission_policy`, or `AskUser(ask)` when only `ask` is given, or
      `DenyAll` when neither is: nothing is approved without the user.
    - elicitation: `elicitation_policy`, or `AskElicitation(ask_elicitation)`; without
      either, nothing is advertised and every elicitation is declined. Never answered
      without the user (see `_elicitation.py`). Accepted URL elicitations wait in
      `SessionState.open_elicitations` until `elicitation/complete`.
    - `auth_state` / `on_auth_status`: the agent's authentication state (`auth/status`,
      `auth/status_update`); `mcp_host`: MCP servers offered to the agent over ACP.
    """

    def __init__(
        self,
        *,
        ask: AskCallback | None = None,
        permission_policy: PermissionPolicy | None = None,
        on_update: UpdateCallback | None = None,
        on_dropped: DroppedCallback | None = None,
        choose_auth_method: AuthChooser | None = None,
        enable_fs: bool = True,
        enable_terminal: bool = True,
        extra_roots: Sequence[str] = (),
        unrestricted_fs: bool = False,
        buffer_provider: BufferProvider | None = None,
        on_write: WriteObserver | None = None,
        max_terminals: int = 16,
        client_name: str = "acpstack",
        ask_elicitation: ElicitationAsk | None = None,
        elicitation_policy: ElicitationPolicy | None = None,
        on_auth_status: AuthStatusCallback | None = None,
        on_elicitation_complete: Callable[[str], None] | None = None,
    ) -> None:
        if permission_policy is None:
            permission_policy = AskUser(ask) if ask is not None else DenyAll()
        self.permission_policy = permission_policy
        if elicitation_policy is None:
            elicitation_policy = (
                AskElicitation(ask_elicitation)
                if ask_elicitation is not None
                else DeclineElicitations()
            )
        self.elicitation_policy = elicitation_policy
        self.on_auth_status = on_auth_status
        self.on_elicitation_complete = on_elicitation_complete
        self.auth_accounts = []
        self.mcp_host = McpHost()
        self.on_update = on_update
        self.on_dropped = on_dropped
        self.dropped_messages = 0  # every message from the agent that had to be discarded
        self.choose_auth_method = choose_auth_method
        self.enable_fs = enable_fs
        self.enable_terminal = enable_terminal
        self.extra_roots = tuple(extra_roots)
        self.unrestricted_fs = unrestricted_fs
        self.fs = FileSystem(buffer_provider=buffer_provider, on_write=on_write)
        self.terminals = TerminalManager(max_terminals=max_terminals)
        self.sessions: dict[str, ClientSession] = {}
        self.released_terminals: dict[str, TerminalOutput] = {}
        # Updates that arrive before we know the session (e.g. sent before session/new answered).
        self._early_states: dict[str, SessionState] = {}
        self.client_name = client_name

    # -- what we advertise ------------------------------------------------------------

    def capabilities(self) -> acp.ClientCapabilities:
        caps = acp.ClientCapabilities(
            fs=acp.FileSystemCapabilities(
                read_text_file=self.enable_fs, write_text_file=self.enable_fs
            ),
            terminal=self.enable_terminal,
            # SessionState keeps notices and compactions.
            session=acp.ClientSessionCapabilities(
                notices=acp.NoticeCapabilities(), compaction=acp.CompactionCapabilities()
            ),
        )
        elicitation = self.elicitation_capabilities()
        if elicitation is not None:
            caps.elicitation = elicitation
        return self.unstable_client_capabilities(caps)

    def on_connect(self, agent: Any) -> None:
        super().on_connect(agent)
        self.mcp_host.agent = agent

    # -- driving the agent -------------------------------------------------------------

    async def initialize(self, *, timeout: float | None = 60) -> acp.InitializeResponse:
        params = acp.InitializeRequest(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=self.capabilities(),
            client_info=acp.Implementation(name=self.client_name, version=__version__),
        )
        return await self.agent.initialize(params, timeout=timeout)

    def register_session(
        self, session_id: str, cwd: str, additional_directories: Sequence[str] = ()
    ) -> ClientSession:
        """Track a session created outside the helpers below (sets its workspace)."""
        workspace = Workspace(
            cwd,
            additional_directories,
            extra_roots=self.extra_roots,
            unrestricted=self.unrestricted_fs,
        )
        session = self.sessions.get(session_id)
        if session is None:
            state = self._early_states.pop(session_id, None) or SessionState(session_id)
            session = self.sessions[session_id] = ClientSession(session_id, workspace, state)
        else:
            session.workspace = workspace
        return session

    async def new_session(
        self,
        cwd: str,
        *,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[acp.McpServer] = (),
    ) -> acp.NewSessionResponse:
        params = acp.NewSessionRequest(cwd=cwd, mcp_servers=list(mcp_servers))
        if additional_directories:
            params.additional_directories = list(additional_directories)
        result = await self._with_auth(lambda: self.agent.session_new(params))
        self.register_session(result.session_id, cwd, additional_directories).state.seed(result)
        return result

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        *,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[acp.McpServer] = (),
    ) -> acp.LoadSessionResponse:
        # Registered first: the replayed history arrives before the response.
        self.register_session(session_id, cwd, additional_directories)
        params = acp.LoadSessionRequest(
            session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers)
        )
        if additional_directories:
            params.additional_directories = list(additional_directories)
        result = await self._with_auth(lambda: self.agent.session_load(params))
        self.sessions[session_id].state.seed(result)
        return result

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        *,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[acp.McpServer] = (),
    ) -> acp.ResumeSessionResponse:
        self.register_session(session_id, cwd, additional_directories)
        params = acp.ResumeSessionRequest(
            session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers)
        )
        if additional_directories:
            params.additional_directories = list(additional_directories)
        result = await self._with_auth(lambda: self.agent.session_resume(params))
        self.sessions[session_id].state.seed(result)
        return result

    async def prompt(
        self,
        session_id: str,
        prompt: str | Sequence[acp.ContentBlock],
        *,
        timeout: float | None = None,
    ) -> acp.PromptResponse:
        blocks: list[acp.ContentBlock] = (
            [acp.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        state = self.sessions[session_id].state if session_id in self.sessions else None
        if state is not None:
            for block in blocks:
                state.apply(acp.UserMessageChunk(content=block))
        return await self.agent.session_prompt(
            acp.PromptRequest(session_id=session_id, prompt=blocks), timeout=timeout
        )

    async def cancel(self, session_id: str) -> None:
        """Cancel the running turn: pending permission asks answer `cancelled` at once."""
        session = self.sessions.get(session_id)
        if session is not None:
            for task in [*session.pending_permissions, *session.pending_elicitations]:
                task.cancel()
        await self.agent.session_cancel(acp.CancelNotification(session_id=session_id))

    async def close_session(self, session_id: str) -> None:
        """Close the session on the agent when it supports it, and free our side."""
        caps = self.agent.capabilities
        try:
            if (
                caps is not None
                and isinstance(caps.session_capabilities, acp.SessionCapabilities)
                and caps.session_capabilities.close not in (UNSET, None)
            ):
                await self.agent.session_close(acp.CloseSessionRequest(session_id=session_id))
        finally:
            await self.terminals.release_session(session_id)
            self.sessions.pop(session_id, None)

    async def _with_auth(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except RequestError as err:
            if err.code != AUTH_REQUIRED or self.choose_auth_method is None:
                raise
            methods = self._usable_auth_methods(err)
            if not methods:
                raise
            method_id = await self.choose_auth_method(methods)
            if method_id is None:
                raise
            await self.agent.authenticate(acp.AuthenticateRequest(method_id=method_id))
            return await call()

    def _usable_auth_methods(self, err: RequestError) -> list[acp.AuthMethod]:
        init = self.agent.initialize_result
        methods = (
            list(init.auth_methods)
            if init is not None and isinstance(init.auth_methods, list)
            else []
        )
        # Terminal-type methods need `auth.terminal`, which this client does not advertise:
        # they are launched by the user, never sent to `authenticate`.
        return [m for m in methods if isinstance(m, acp.AuthMethodAgent)]

    def terminal_snapshot(self, session_id: str, terminal_id: str) -> TerminalOutput | None:
        """A terminal's output so far, also after the agent released it (for UIs)."""
        try:
            return self.terminals.output(session_id, terminal_id)
        except RequestError:
            return self.released_terminals.get(terminal_id)

    # -- handlers (what the agent calls) ----------------------------------------------------

    def _session(self, session_id: str) -> ClientSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id}, f"Unknown session: {session_id}"
            )
        return session

    async def session_update(self, params: acp.SessionNotification) -> None:
        session = self.sessions.get(params.session_id)
        if session is not None:
            session.state.apply(params.update)
        else:
            self._early_states.setdefault(params.session_id, SessionState(params.session_id)).apply(
                params.update
            )
        if self.on_update is not None:
            self.on_update(params.session_id, params.update)

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        self.dropped_messages += 1
        session = self.sessions.get(dropped.session_id) if dropped.session_id else None
        if session is not None:
            session.state.dropped_messages += 1
        if self.on_dropped is not None:
            self.on_dropped(dropped)

    async def session_request_permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        session = self._session(params.session_id)
        _check_unique_option_ids(params.options)
        decide = asyncio.ensure_future(self.permission_policy.decide(params))
        session.pending_permissions.add(decide)
        try:
            choice = await decide
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if decide.cancelled() and (current is None or current.cancelling() == 0):
                return acp.RequestPermissionResponse(
                    outcome=acp.CancelledRequestPermissionOutcome()
                )
            decide.cancel()
            raise
        finally:
            session.pending_permissions.discard(decide)
        if choice is None:
            choice = reject_option(params.options)
            if choice is None:
                return acp.RequestPermissionResponse(
                    outcome=acp.CancelledRequestPermissionOutcome()
                )
        return acp.RequestPermissionResponse(
            outcome=acp.SelectedPermissionOutcome(option_id=choice.option_id)
        )

    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
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
        if not self.enable_fs:
            raise RequestError.method_not_found("fs/write_text_file")
        workspace = self._session(params.session_id).workspace
        await self.fs.write_text_file(workspace, params.path, params.content)
        return acp.WriteTextFileResponse()

    async def terminal_create(
        self, params: acp.CreateTerminalRequest
    ) -> acp.CreateTerminalResponse:
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
        status = await self.terminals.wait_for_exit(params.session_id, params.terminal_id)
        return acp.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_kill(self, params: acp.KillTerminalRequest) -> acp.KillTerminalResponse:
        await self.terminals.kill(params.session_id, params.terminal_id)
        return acp.KillTerminalResponse()

    async def terminal_release(
        self, params: acp.ReleaseTerminalRequest
    ) -> acp.ReleaseTerminalResponse:
        # Keep the final output: a UI still shows a terminal embedded in a tool call after release.
        with contextlib.suppress(RequestError):
            self.released_terminals[params.terminal_id] = self.terminals.output(
                params.session_id, params.terminal_id
            )
            while len(self.released_terminals) > 64:
                self.released_terminals.pop(next(iter(self.released_terminals)))
        await self.terminals.release(params.session_id, params.terminal_id)
        return acp.ReleaseTerminalResponse()

    async def on_disconnect(self) -> None:
        for session in self.sessions.values():
            for task in [*session.pending_permissions, *session.pending_elicitations]:
                task.cancel()
        await self.mcp_host.aclose()
        with contextlib.suppress(Exception):
            await self.terminals.aclose()


def _check_unique_option_ids(options: Sequence[acp.PermissionOption]) -> None:
    """Two options with one optionId make any answer ambiguous (it could mean allow): refuse."""
    seen: set[str] = set()
    for option in options:
        if option.option_id in seen:
            shown = (
                option.option_id if len(option.option_id) <= 100 else option.option_id[:100] + "..."
            )
            raise RequestError.invalid_params(
                {"path": "$.params.options", "optionId": shown},
                f"Duplicate permission optionId: {shown!r}",
            )
        seen.add(option.option_id)
