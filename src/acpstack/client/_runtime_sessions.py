"""How `ClientRuntime` drives the agent's sessions (a mixin): new, load and resume (with
the authentication the agent asks for), prompt, cancel and close, on either protocol
version (v2's calls are in `_runtime_v2.py`). Each session it knows gets a
`ClientSession`: the workspace its files and terminals are confined to, and its state."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import UNSET

from acpstack.client._state import SessionState
from acpstack.local import TerminalManager, Workspace
from acpstack.schema import v1 as acp
from acpstack.wire import AUTH_REQUIRED, CapabilityError, RequestError, capability_allows

if TYPE_CHECKING:
    from acpstack.client._client import AgentPeer
    from acpstack.schema import v1_unstable as acpu

T = TypeVar("T")
R = TypeVar("R", acp.LoadSessionResponse, acp.ResumeSessionResponse)
AuthChooser = Callable[[list["acp.AuthMethod"]], Awaitable["str | None"]]
# Runs a terminal login (the agent's program with the method's args and env, in the user's
# terminal); True when it succeeded (exit code 0).
TerminalLogin = Callable[["acp.AuthMethodTerminal"], Awaitable[bool]]
# The params of each session setup method (the same name in the stable and unstable types).
SETUP_REQUESTS = {
    "session/new": "NewSessionRequest",
    "session/load": "LoadSessionRequest",
    "session/resume": "ResumeSessionRequest",
    "session/fork": "ForkSessionRequest",
}


@dataclass
class ClientSession:
    """What the client keeps per session: its workspace, state and pending permission asks."""

    session_id: str
    workspace: Workspace
    state: SessionState
    pending_permissions: set[asyncio.Task[acp.PermissionOption | None]] = field(default_factory=set)
    pending_elicitations: set[asyncio.Task[Any]] = field(default_factory=set)


class SessionMethods:
    """The session calls of `ClientRuntime`, over the attributes its `__init__` sets."""

    agent: AgentPeer
    sessions: dict[str, ClientSession]
    terminals: TerminalManager
    extra_roots: tuple[str, ...]
    unrestricted_fs: bool
    choose_auth_method: AuthChooser | None
    run_terminal_login: TerminalLogin | None
    initialize_result: acp.InitializeResponse | None
    _early_states: dict[str, SessionState]

    if TYPE_CHECKING:  # what ClientRuntime provides (declared for the type checker only)

        @property
        def _v2(self) -> bool: ...

        async def _new_session_v2(
            self, cwd: str, additional_directories: Sequence[str], mcp_servers: Sequence[Any]
        ) -> acp.NewSessionResponse: ...

        async def _resume_v2(
            self,
            session_id: str,
            cwd: str,
            additional_directories: Sequence[str],
            mcp_servers: Sequence[Any],
            *,
            replay: bool,
        ) -> list[acp.SessionConfigOption]: ...

        async def _prompt_v2(
            self, session_id: str, blocks: list[acp.ContentBlock], timeout: float | None
        ) -> acp.PromptResponse: ...

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
        mcp_servers: Sequence[acp.McpServer | acpu.McpServerAcp] = (),
        system_prompt: str | acpu.SystemPrompt | None = None,
    ) -> acp.NewSessionResponse:
        """Create a session on the agent (authenticating first when the agent asks and
        `choose_auth_method` picks a method) and track it: its workspace is `cwd` and
        `additional_directories`, its `SessionState` starts with the modes and options of
        the answer.

        `mcp_servers`: stdio, http and sse servers, and on unstable connections the MCP
        servers this client offers over ACP (`McpServerAcp`, from `mcp_host.add`).
        `system_prompt` (unstable): text appended to the agent's own instructions, or a
        `SystemPrompt` (its mode and content); sent only to an agent that advertises
        `sessionCapabilities.systemPrompt` (mode `override`: `...systemPrompt.mode.override`).
        What cannot be sent raises `CapabilityError` before anything is sent."""
        if self._v2:
            self._v1_only(system_prompt)
            result = await self._with_auth(
                lambda: self._new_session_v2(cwd, additional_directories, mcp_servers)
            )
            self.register_session(result.session_id, cwd, additional_directories)
            return result
        params = self._setup_params(
            "session/new", mcp_servers, system_prompt, additional_directories, cwd=cwd
        )
        result = await self._with_auth(lambda: self.agent.session_new(params))
        self.register_session(result.session_id, cwd, additional_directories).state.seed(result)
        return result

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        *,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[acp.McpServer | acpu.McpServerAcp] = (),
        system_prompt: str | acpu.SystemPrompt | None = None,
    ) -> acp.LoadSessionResponse:
        """Load a stored session: tracked first, so the replayed history fills its
        `SessionState` before the answer (on v2: `session/resume` replaying from the start).
        `mcp_servers` and `system_prompt` as for `new_session`."""
        return await self._reopen_session(
            session_id,
            cwd,
            additional_directories,
            mcp_servers,
            system_prompt,
            replay=True,
            request="session/load",
            send=self.agent.session_load,
            answer=acp.LoadSessionResponse,
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        *,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[acp.McpServer | acpu.McpServerAcp] = (),
        system_prompt: str | acpu.SystemPrompt | None = None,
    ) -> acp.ResumeSessionResponse:
        """Resume a stored session without its history (the agent does not replay it).
        `mcp_servers` and `system_prompt` as for `new_session`."""
        return await self._reopen_session(
            session_id,
            cwd,
            additional_directories,
            mcp_servers,
            system_prompt,
            replay=False,
            request="session/resume",
            send=self.agent.session_resume,
            answer=acp.ResumeSessionResponse,
        )

    async def _reopen_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str],
        mcp_servers: Sequence[acp.McpServer | acpu.McpServerAcp],
        system_prompt: str | acpu.SystemPrompt | None,
        *,
        replay: bool,
        request: str,
        send: Callable[[Any], Awaitable[R]],
        answer: type[R],
    ) -> R:
        """session/load (`replay`) or session/resume of a stored session; on v2 both are
        session/resume, replaying from the start or not."""
        if self._v2:
            self._v1_only(system_prompt)
            with self._tracked_while_reopening(session_id, cwd, additional_directories):
                options = await self._with_auth(
                    lambda: self._resume_v2(
                        session_id, cwd, additional_directories, mcp_servers, replay=replay
                    )
                )
            return answer(config_options=options or UNSET)
        params = self._setup_params(
            request,
            mcp_servers,
            system_prompt,
            additional_directories,
            session_id=session_id,
            cwd=cwd,
        )
        with self._tracked_while_reopening(session_id, cwd, additional_directories):
            result = await self._with_auth(lambda: send(params))
        self.sessions[session_id].state.seed(result)
        return result

    @contextlib.contextmanager
    def _tracked_while_reopening(
        self, session_id: str, cwd: str, additional_directories: Sequence[str]
    ) -> Iterator[None]:
        """Track the session before asking (a replayed history arrives before the answer),
        and forget it again when the agent refused (it stays tracked if it already was)."""
        known = session_id in self.sessions
        self.register_session(session_id, cwd, additional_directories)
        try:
            yield
        except BaseException:
            if not known:
                self.sessions.pop(session_id, None)
            raise

    # -- what session setup sends -------------------------------------------------------------

    def _setup_params(
        self,
        method: str,
        mcp_servers: Sequence[acp.McpServer | acpu.McpServerAcp],
        system_prompt: str | acpu.SystemPrompt | None,
        additional_directories: Sequence[str] = (),
        **fields: Any,
    ) -> Any:
        """The params of session setup `method` (session/new, load, resume, fork): in the
        unstable types on an unstable connection, with the system prompt if any;
        `CapabilityError` for what this connection or agent cannot take."""
        request = SETUP_REQUESTS[method]
        servers = list(mcp_servers)
        if servers or method != "session/fork":  # (optional in a fork only)
            fields["mcp_servers"] = servers
        if not self.agent.connection.unstable:
            unstable_only = [
                (not hasattr(acp, request), method),
                (system_prompt is not None, "system_prompt"),
                (
                    any(type(s).__name__ == "McpServerAcp" for s in servers),
                    "an MCP server offered over ACP (McpServerAcp, from mcp_host.add)",
                ),
            ]
            for used, what in unstable_only:
                if used:
                    raise CapabilityError(
                        f"{what}: an unstable ACP feature, and this connection did not enable "
                        "unstable features (connect with unstable=True on both sides)"
                    )
            params = getattr(acp, request)(**fields)
        else:
            from acpstack.schema import v1_unstable as acpu

            params = getattr(acpu, request)(**fields)
            prompt = self._checked_system_prompt(system_prompt)
            if prompt is not None:
                params.system_prompt = prompt
        if additional_directories:
            params.additional_directories = list(additional_directories)
        return params

    def _checked_system_prompt(
        self, system_prompt: str | acpu.SystemPrompt | None
    ) -> acpu.SystemPrompt | None:
        """`system_prompt` as sent (text: one block, mode `append`), or `CapabilityError`
        when the agent did not advertise it (`override` needs `mode.override`)."""
        if system_prompt is None:
            return None
        from acpstack.schema import v1_unstable as acpu

        if isinstance(system_prompt, str):
            system_prompt = acpu.SystemPrompt("append", [acpu.TextContent(text=system_prompt)])
        session_caps = getattr(self.agent.capabilities, "session_capabilities", None)
        if not capability_allows(session_caps, ("system_prompt",)):
            raise CapabilityError(
                "the agent does not advertise sessionCapabilities.systemPrompt: it takes no "
                "system prompt (ClientRuntime never sends one it did not offer to take)"
            )
        if system_prompt.mode == "override" and not capability_allows(
            session_caps, ("system_prompt", "mode", "override")
        ):
            raise CapabilityError(
                "the agent does not advertise sessionCapabilities.systemPrompt.mode.override: "
                "it only appends to its own instructions (use mode 'append')"
            )
        return system_prompt

    def _v1_only(self, system_prompt: Any) -> None:
        if system_prompt is not None:
            raise CapabilityError(
                "system_prompt: ClientRuntime does not send it on protocol v2 connections yet"
            )

    async def prompt(
        self,
        session_id: str,
        prompt: str | Sequence[acp.ContentBlock],
        *,
        timeout: float | None = None,
    ) -> acp.PromptResponse:
        """Send a prompt (text, or content blocks) and wait for the turn's end: the answer
        with its stop reason (on v2: at the idle state update). The prompt joins the
        session's messages as the user's."""
        blocks: list[acp.ContentBlock] = (
            [acp.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        if self._v2:  # (the agent echoes the prompt as the user's message)
            return await self._prompt_v2(session_id, blocks, timeout)
        state = self.sessions[session_id].state if session_id in self.sessions else None
        if state is not None:
            for block in blocks:
                state.apply(acp.UserMessageChunk(content=block))
        result = await self.agent.session_prompt(
            acp.PromptRequest(session_id=session_id, prompt=blocks), timeout=timeout
        )
        if state is not None:
            state.stop_reason = result.stop_reason
        return result

    async def cancel(self, session_id: str) -> None:
        """Cancel the running turn: pending permission asks answer `cancelled` at once."""
        session = self.sessions.get(session_id)
        if session is not None:
            for task in [*session.pending_permissions, *session.pending_elicitations]:
                task.cancel()
        if self._v2:
            from acpstack.schema import v2

            await self.agent.notify(
                "session/cancel", v2.CancelSessionNotification(session_id=session_id)
            )
            return
        await self.agent.session_cancel(acp.CancelNotification(session_id=session_id))

    async def close_session(self, session_id: str) -> None:
        """Close the session on the agent when it supports it, and free our side."""
        caps = self.agent.capabilities
        try:
            if self._v2:  # session/close is baseline in v2
                from acpstack.schema import v2

                await self.agent.call(
                    "session/close", v2.CloseSessionRequest(session_id=session_id)
                )
            elif (
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
            chosen = next((m for m in methods if m.id == method_id), None)
            if isinstance(chosen, acp.AuthMethodTerminal) and self.run_terminal_login:
                # Never sent to `authenticate`: the user logs in through the agent's program.
                if not await self.run_terminal_login(chosen):
                    raise
            elif self._v2:
                from acpstack.schema import v2

                await self.agent.call("auth/login", v2.LoginAuthRequest(method_id=method_id))
            else:
                await self.agent.authenticate(acp.AuthenticateRequest(method_id=method_id))
            return await call()

    def _usable_auth_methods(self, err: RequestError) -> list[acp.AuthMethod]:
        init = self.initialize_result
        methods = (
            list(init.auth_methods)
            if init is not None and isinstance(init.auth_methods, list)
            else []
        )
        # Terminal-type methods need `auth.terminal`, advertised with `run_terminal_login`.
        kinds = (acp.AuthMethodAgent, acp.AuthMethodTerminal)
        usable = kinds if self.run_terminal_login is not None else acp.AuthMethodAgent
        return [m for m in methods if isinstance(m, usable)]
