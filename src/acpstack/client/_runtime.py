"""`ClientRuntime`: a complete ACP client that does the real work.

Real files (inside each session's workspace), real terminals, permission policies, the
session state built from `session/update`, and the authentication flow. Use it as the
`client` of `spawn_agent` / `connect_client`, then drive the agent with its methods.

One class, in this order: construction and `initialize`; the handlers of what the agent
sends; the session calls (new, load, resume with the authentication the agent asks for,
prompt, cancel, close); protocol v2 (its turns end with an idle state update; its
requests and answers are mapped by `_runtime_v2.py` and `_v2_results.py`); files and terminals (`fs/*`,
`terminal/*`, inside each session's workspace); and the newer methods (elicitation, auth
status, MCP servers offered over ACP, session management). Each session it knows gets a
`ClientSession`: its workspace, state and pending questions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import UNSET

import acpstack.events as events
from acpstack._version import __version__
from acpstack.client import _v2_values as values
from acpstack.client._client import Client
from acpstack.client._elicitation import (
    AskElicitation,
    DeclineElicitations,
    ElicitationAsk,
    ElicitationPolicy,
    ElicitationReply,
    check_form_answer,
)
from acpstack.client._mcp_host import McpHost
from acpstack.client._permissions import (
    AskCallback,
    AskUser,
    DenyAll,
    PermissionPolicy,
    reject_option,
)
from acpstack.client._runtime_v2 import (
    TurnWait,
    error_of,
    mcp_servers_to_v2,
    permission_request,
)
from acpstack.client._state import SessionState
from acpstack.events import v2 as events_v2
from acpstack.local import (
    BufferProvider,
    FileSystem,
    TerminalExit,
    TerminalManager,
    TerminalOutput,
    Workspace,
    WriteObserver,
)
from acpstack.rpc import ConnectionClosed
from acpstack.schema import PROTOCOL_VERSIONS, UnknownSessionUpdate
from acpstack.schema import convert as schema_convert
from acpstack.schema import v1 as acp
from acpstack.wire import (
    AUTH_REQUIRED,
    UNSUPPORTED_PROTOCOL_VERSION,
    CapabilityError,
    DroppedMessage,
    RequestError,
    capability_allows,
)

log = logging.getLogger("acpstack.client")
# v2 updates whose spelling differs from the events' (see `events.v2.respelled`).
_V2_SPELLED = (events.AvailableCommandsUpdate, events.ConfigOptionUpdate)

UpdateCallback = Callable[[str, "events.Event"], None]
DroppedCallback = Callable[[DroppedMessage], None]
AuthStatusCallback = Callable[["acpu.AuthStatusUpdateNotification | acpu.AuthStatusResponse"], None]
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


if TYPE_CHECKING:
    from acpstack.client._state import AgentTerminal, SessionState, ToolCallState
    from acpstack.schema import v1_unstable as acpu
    from acpstack.schema import v2


class ClientRuntime(Client):
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
    - `run_terminal_login`: given, `auth.terminal` is advertised (on v2 too), and a terminal
      method the user picks (`choose_auth_method`) is run through it, never sent to
      `authenticate` (`auth/login`).
    - `protocol_version`: the ACP version asked for (1, or 2: the v2 draft, which a v1 agent
      answers with 1; a v2-only agent answers a request for 1 with -32022, and the runtime
      asks again for 2). Whatever the connection speaks, the calls take and return v1's
      types, and `SessionState` and `on_update` have every update as a version-neutral
      event (`acpstack.events`: v2's kinds too, unknown kinds as `UnknownEvent`).
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
        protocol_version: int = 1,
        run_terminal_login: TerminalLogin | None = None,
    ) -> None:
        if protocol_version not in PROTOCOL_VERSIONS:
            raise ValueError(f"unknown ACP protocol version {protocol_version!r}")
        self.protocol_version: int = protocol_version
        self._turns: dict[str, TurnWait] = {}
        self.initialize_result: acp.InitializeResponse | None = None
        if permission_policy is None:
            permission_policy = AskUser(ask) if ask is not None else DenyAll()
        self.permission_policy: PermissionPolicy = permission_policy
        if elicitation_policy is None:
            elicitation_policy = (
                AskElicitation(ask_elicitation)
                if ask_elicitation is not None
                else DeclineElicitations()
            )
        self.elicitation_policy: ElicitationPolicy = elicitation_policy
        self.on_auth_status: AuthStatusCallback | None = on_auth_status
        self.on_elicitation_complete: Callable[[str], None] | None = on_elicitation_complete
        self.auth_accounts: list[Any] = []
        self.mcp_host: McpHost = McpHost()
        self.on_update: UpdateCallback | None = on_update
        self.on_dropped: DroppedCallback | None = on_dropped
        # every message from the agent that had to be discarded
        self.dropped_messages: int = 0
        self.choose_auth_method: AuthChooser | None = choose_auth_method
        self.run_terminal_login: TerminalLogin | None = run_terminal_login
        self.enable_fs: bool = enable_fs
        self.enable_terminal: bool = enable_terminal
        self.extra_roots: tuple[str, ...] = tuple(extra_roots)
        self.unrestricted_fs: bool = unrestricted_fs
        self.fs: FileSystem = FileSystem(buffer_provider=buffer_provider, on_write=on_write)
        self.terminals: TerminalManager = TerminalManager(max_terminals=max_terminals)
        self.sessions: dict[str, ClientSession] = {}
        self.released_terminals: dict[str, TerminalOutput] = {}
        # Updates that arrive before we know the session (e.g. sent before session/new answered).
        self._early_states: dict[str, SessionState] = {}
        self.client_name: str = client_name

    # -- what we advertise ------------------------------------------------------------

    def capabilities(self) -> acp.ClientCapabilities:
        """What this runtime advertises in `initialize`: `fs` and `terminal` as enabled,
        notices and compaction, elicitation when a policy asks the user, and the unstable
        capabilities on unstable connections."""
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
        if self.run_terminal_login is not None:  # the agent may offer terminal logins
            caps.auth = acp.AuthCapabilities(terminal=True)
        return self.unstable_client_capabilities(caps)

    def on_connect(self, agent: Any) -> None:
        """Keep the handle to the agent (the MCP host offers its servers through it)."""
        super().on_connect(agent)
        self.mcp_host.agent = agent

    # -- initialize ------------------------------------------------------------------------

    async def initialize(self, *, timeout: float | None = 60) -> acp.InitializeResponse:
        """Negotiate the version (see the class) and return the agent's answer (on v2 in
        v1's shape: `agent.initialize_result` is the answer as it came)."""
        asked = self.protocol_version
        try:
            await self.agent.initialize(self._initialize_params(asked), timeout=timeout)
        except RequestError as err:
            other = _other_version(err, asked)
            if other is None:
                raise
            log.info(
                "the agent does not speak ACP protocol version %d; asking for %d", asked, other
            )
            await self.agent.initialize(self._initialize_params(other), timeout=timeout)
        log.info("ACP protocol version %s negotiated", self.agent.protocol_version)
        result = self.agent.model_initialize_result or self.agent.initialize_result
        assert isinstance(result, acp.InitializeResponse)
        self.initialize_result = result
        return result

    def _initialize_params(self, version: int) -> Any:
        if version == 2:
            from acpstack.schema import v2

            caps = v2.ClientCapabilities()
            elicitation = self.elicitation_capabilities()
            if elicitation is not None:
                caps.elicitation = msgspec.convert(
                    msgspec.to_builtins(elicitation), v2.ElicitationCapabilities
                )
            if self.run_terminal_login is not None:  # v2's support markers are `{}`
                terminal = v2.TerminalAuthCapabilities()
                caps.auth = v2.ClientAuthCapabilities(terminal=terminal)
            info = v2.Implementation(name=self.client_name, version=__version__)
            return v2.InitializeRequest(protocol_version=2, info=info, capabilities=caps)
        return acp.InitializeRequest(
            protocol_version=version,
            client_capabilities=self.capabilities(),
            client_info=acp.Implementation(name=self.client_name, version=__version__),
        )

    def _state_of(self, session_id: str) -> SessionState:
        session = self.sessions.get(session_id)
        if session is not None:
            return session.state
        return self._early_states.setdefault(session_id, SessionState(session_id))

    # -- handlers (what the agent calls) ----------------------------------------------------

    def _session(self, session_id: str) -> ClientSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id}, f"Unknown session: {session_id}"
            )
        return session

    # The params of `session/update` are read straight into an event (both versions).
    incoming_params: ClassVar[Mapping[str, type]] = {"session/update": events.SessionNotification}

    async def session_update(self, params: events.SessionNotification) -> None:  # type: ignore[override]
        """`session/update` (v1): apply the event to its session's state (kept aside for a
        session not known yet) and pass it to `on_update`."""
        update: Any = params.update  # (an unknown kind: the wire keeps it as it keeps v1's)
        if type(update) is UnknownSessionUpdate:
            update = events.UnknownEvent(update.data)
        session = self.sessions.get(params.session_id)
        if session is not None:
            session.state.apply(update)
        else:
            self._early_states.setdefault(params.session_id, SessionState(params.session_id)).apply(
                update
            )
        if self.on_update is not None:
            self.on_update(params.session_id, update)

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        """Count a message the agent sent that had to be discarded (on the runtime and on
        its session's state) and pass it to `on_dropped`."""
        self.dropped_messages += 1
        session = self.sessions.get(dropped.session_id) if dropped.session_id else None
        if session is not None:
            session.state.dropped_messages += 1
        if self.on_dropped is not None:
            self.on_dropped(dropped)

    async def session_request_permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        """`session/request_permission`: the `permission_policy`'s choice (no choice: a
        reject option, or `cancelled` when none is offered); `cancelled` when the turn is
        cancelled while the policy decides; -32602 for duplicate option ids."""
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

    async def on_disconnect(self) -> None:
        """The agent is gone: end waiting turns, cancel pending questions to the user, stop
        the MCP servers offered over ACP and every terminal."""
        self._end_turns()
        for session in self.sessions.values():
            for task in [*session.pending_permissions, *session.pending_elicitations]:
                task.cancel()
        await self.mcp_host.aclose()
        with contextlib.suppress(Exception):
            await self.terminals.aclose()

    # -- the session calls ---------------------------------------------------------------

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

    async def attach_session(
        self,
        session_id: str,
        cwd: str,
        *,
        role: Literal["observer", "controller"] = "observer",
        history: Literal["pending", "none"] = "pending",
    ) -> None:
        """Attach to a live session another client holds on the same `acpstack serve`
        (an extension: `_acpstack/session/attach`, see docs/remote.md): an observer sees
        its stream; a controller may also prompt, cancel and answer the agent's requests
        (the first answer of any client wins). `history="pending"` sends a controller the
        requests still waiting for an answer. Raises RequestError (-32002 when no client
        holds the session on that server)."""
        self.register_session(session_id, cwd)
        await self.agent.connection.request(
            "_acpstack/session/attach",
            {"sessionId": session_id, "role": role, "history": history},
        )

    async def detach_session(self, session_id: str) -> None:
        """Stop seeing a session attached with `attach_session`."""
        await self.agent.connection.request("_acpstack/session/detach", {"sessionId": session_id})
        self.sessions.pop(session_id, None)

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
                state.apply(events.UserMessageChunk(content=block))
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

    # -- protocol v2 ---------------------------------------------------------------------

    @property
    def _v2(self) -> bool:
        return self.agent.protocol_version == 2

    async def _new_session_v2(
        self, cwd: str, additional_directories: Sequence[str], mcp_servers: Sequence[Any]
    ) -> acp.NewSessionResponse:
        from acpstack.client import _v2_results as view
        from acpstack.schema import v2

        params = v2.NewSessionRequest(cwd=cwd, mcp_servers=mcp_servers_to_v2(mcp_servers))
        if additional_directories:
            params.additional_directories = list(additional_directories)
        result = await self.agent.call("session/new", params)
        options = view.config_options(result.config_options)
        self._state_of(result.session_id).set_config_options(options)
        return acp.NewSessionResponse(session_id=result.session_id, config_options=options or UNSET)

    async def _resume_v2(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str],
        mcp_servers: Sequence[Any],
        *,
        replay: bool,
    ) -> list[acp.SessionConfigOption]:
        from acpstack.client import _v2_results as view
        from acpstack.schema import v2

        params = v2.ResumeSessionRequest(
            session_id=session_id, cwd=cwd, mcp_servers=mcp_servers_to_v2(mcp_servers)
        )
        if additional_directories:
            params.additional_directories = list(additional_directories)
        if replay:
            params.replay_from = v2.ReplayFromStart()
        result = await self.agent.call("session/resume", params)
        options = view.config_options(result.config_options)
        if options:
            self._state_of(session_id).set_config_options(options)
        return options

    async def _prompt_v2(
        self, session_id: str, blocks: list[acp.ContentBlock], timeout: float | None
    ) -> acp.PromptResponse:
        from acpstack.schema import v2

        if session_id in self._turns:
            raise RequestError.invalid_params(
                {"sessionId": session_id}, "A prompt turn is already running in this session"
            )
        prompt = schema_convert(msgspec.to_builtins(blocks), list[v2.ContentBlock])
        wait = TurnWait(asyncio.get_running_loop().create_future())
        self._turns[session_id] = wait
        try:
            async with asyncio.timeout(timeout):
                await self.agent.call(
                    "session/prompt", v2.PromptRequest(session_id=session_id, prompt=prompt)
                )
                wait.acked = True
                stop, error = await self._turn_end(wait)
        finally:
            self._turns.pop(session_id, None)
        if stop == "error":
            raise error_of(error)
        return acp.PromptResponse(stop_reason=values.stop_reason(stop))

    async def _turn_end(self, wait: TurnWait) -> tuple[str | None, Any]:
        """The end of the turn, or ConnectionClosed if the connection ends first."""
        closed: asyncio.Future[Any] = asyncio.ensure_future(self.agent.connection.wait_closed())
        try:
            await asyncio.wait([wait.done, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        if not wait.done.done():
            self._end_turns()
        return await wait.done

    def _turn_state(self, session_id: str, state: SessionState) -> None:
        """A state update arrived: the end of a turn `prompt` waits for?"""
        wait = self._turns.get(session_id)
        if wait is None or wait.done.done():
            return
        if state.state != "idle":
            wait.started = True
        elif wait.started or wait.acked:  # (an idle before both is an older snapshot)
            wait.done.set_result((state.stop_reason, state.error))

    def _end_turns(self) -> None:
        """The connection closed: every waiting `prompt` fails with ConnectionClosed."""
        reason = self.agent.connection.transport.close_reason() or "connection closed"
        for wait in self._turns.values():
            if not wait.done.done():
                wait.done.set_exception(ConnectionClosed(reason))

    async def cancel_tool_call(
        self, session_id: str, tool_call_id: str, *, timeout: float | None = 60
    ) -> None:
        """Cancel one tool call of the running turn (protocol v2 `tool_call/cancel`); the
        turn goes on (`cancel` ends the whole turn).

        Only a tool call that advertises it (`SessionState.tool_calls[id].cancellable`) can
        be cancelled: otherwise, and on a v1 connection (v1 has no such method), this
        raises `CapabilityError` and sends nothing. The agent answers once it accepted
        the cancellation; the call's final status (normally `cancelled`) arrives as an
        update. `RequestError` when the agent refuses (-32602: unknown, final or not
        cancellable by then)."""
        from acpstack.schema import v2

        self._check_cancellable("tool_call/cancel", session_id, tool_call_id)
        params = v2.CancelToolCallRequest(session_id=session_id, tool_call_id=tool_call_id)
        await self.agent.call("tool_call/cancel", params, timeout=timeout)

    async def cancel_terminal(
        self, session_id: str, terminal_id: str, *, timeout: float | None = 60
    ) -> None:
        """Stop the command of one agent terminal (protocol v2 `terminal/cancel`); the
        turn goes on, and the tool call that shows the terminal is not cancelled by it.

        Only a terminal that advertises it (`SessionState.agent_terminals[id].cancellable`)
        can be cancelled: otherwise, and on a v1 connection, this raises
        `CapabilityError` and sends nothing. The agent answers once it accepted; the
        terminal's exit status arrives as a `terminal_update`. `RequestError` when the
        agent refuses (-32602: unknown, exited or not cancellable by then)."""
        from acpstack.schema import v2

        self._check_cancellable("terminal/cancel", session_id, terminal_id)
        params = v2.CancelTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        await self.agent.call("terminal/cancel", params, timeout=timeout)

    def _check_cancellable(self, method: str, session_id: str, item_id: str) -> None:
        """As the TypeScript SDK does: never send a cancel the agent did not advertise."""
        if not self._v2:
            raise CapabilityError(
                f"{method} is a protocol v2 method; this connection speaks version "
                f"{self.agent.protocol_version}"
            )
        state = self._state_of(session_id)
        item: ToolCallState | AgentTerminal | None
        if method == "tool_call/cancel":
            what, item = "Tool call", state.tool_calls.get(item_id)
        else:
            what, item = "Terminal", state.agent_terminals.get(item_id)
        if item is None or not item.cancellable:
            raise CapabilityError(f"{what} {item_id!r} does not advertise cancel")

    async def v2_session_update(self, params: events.SessionNotification) -> None:
        """v2 `session/update`: as v1's (the event in its neutral spelling), and the end
        of a waiting prompt at its idle state."""
        update: Any = params.update
        if type(update) is UnknownSessionUpdate:
            update = events.UnknownEvent(update.data)
        elif type(update) in _V2_SPELLED:
            update = events_v2.respelled(update)
        session_id = params.session_id
        state = self._state_of(session_id)
        state.apply(update)
        if self.on_update is not None:
            self.on_update(session_id, update)
        if type(update) is events.StateUpdate:
            self._turn_state(session_id, state)

    async def v2_session_request_permission(
        self, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionResponse:
        """v2 `session/request_permission`, answered by the same `permission_policy` as v1's."""
        from acpstack.schema import v2

        answer = await self.session_request_permission(permission_request(params))
        outcome = answer.outcome
        if isinstance(outcome, acp.SelectedPermissionOutcome):
            return v2.RequestPermissionResponse(
                outcome=v2.SelectedPermissionOutcome(option_id=outcome.option_id)
            )
        return v2.RequestPermissionResponse(outcome=v2.CancelledPermissionOutcome())

    async def v2_elicitation_create(
        self, params: v2.CreateElicitationRequest
    ) -> v2.CreateElicitationResponse:
        """v2 `elicitation/create`, answered by the same `elicitation_policy` as v1's."""
        from acpstack.schema import v2

        model = msgspec.convert(msgspec.to_builtins(params), acp.CreateElicitationRequest)
        answer = await self.elicitation_create(model)
        return msgspec.convert(msgspec.to_builtins(answer), v2.CreateElicitationResponse)

    async def v2_elicitation_complete(self, params: v2.CompleteElicitationNotification) -> None:
        """v2 `elicitation/complete`: as v1's."""
        await self.elicitation_complete(
            acp.CompleteElicitationNotification(elicitation_id=params.elicitation_id)
        )

    # -- files and terminals for the agent (v1) -------------------------------------------

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

    # -- the newer methods -------------------------------------------------------------------

    # The agent's last reported authentication state (`auth/status` or `auth/status_update`).
    auth_state: str | None = None

    def elicitation_capabilities(self) -> acp.ElicitationCapabilities | None:
        """The elicitation modes advertised: those of `elicitation_policy` when it asks the
        user, else None (nothing advertised)."""
        policy = self.elicitation_policy
        if not policy.asks_user:
            return None
        modes = tuple(getattr(policy, "modes", ("form", "url")))
        caps = acp.ElicitationCapabilities()
        if "form" in modes:
            caps.form = acp.ElicitationFormCapabilities()
        if "url" in modes:
            caps.url = acp.ElicitationUrlCapabilities()
        return caps

    def unstable_client_capabilities(self, caps: acp.ClientCapabilities) -> acp.ClientCapabilities:
        """On an unstable connection, `caps` in the unstable types plus `subagents` (the
        session state keeps child sessions, their state and inter-session messages)."""
        agent = getattr(self, "agent", None)
        if agent is None or not agent.connection.unstable:
            return caps
        import msgspec

        from acpstack.schema import v1_unstable as acpu

        unstable = msgspec.json.decode(msgspec.json.encode(caps), type=acpu.ClientCapabilities)
        unstable.subagents = acpu.SubagentCapabilities()
        return unstable

    async def elicitation_create(
        self, params: acp.CreateElicitationRequest
    ) -> acp.CreateElicitationResponse:
        """`elicitation/create`: the `elicitation_policy`'s answer (a form answer limited to
        the requested fields; -32602 for a mode not advertised, an unknown session or a
        form answer without a required field); `cancel` when the turn is cancelled."""
        mode = str(params.mode)
        advertised = self.elicitation_capabilities()
        if not capability_allows(advertised, (mode,)):
            raise RequestError.invalid_params(
                {"mode": mode}, f"Unsupported elicitation mode: {mode}"
            )
        session_id = params.session_id if isinstance(params.session_id, str) else None
        session = self.sessions.get(session_id) if session_id else None
        if session_id is not None and session is None:
            raise RequestError.invalid_params({"sessionId": session_id}, "Unknown session")
        decide = asyncio.ensure_future(self.elicitation_policy.decide(params))
        if session is not None:
            session.pending_elicitations.add(decide)
        try:
            reply: ElicitationReply = await decide
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if decide.cancelled() and (current is None or current.cancelling() == 0):
                return acp.CreateElicitationResponse(action="cancel")  # the turn was cancelled
            decide.cancel()
            raise
        finally:
            if session is not None:
                session.pending_elicitations.discard(decide)
        result = acp.CreateElicitationResponse(action=reply.action)
        if reply.action == "accept" and mode == "form":
            try:
                result.content = check_form_answer(params, reply)
            except ValueError as exc:
                raise RequestError.invalid_params({"mode": mode}, str(exc)) from None
        if reply.action == "accept" and mode == "url" and session is not None:
            session.state.open_elicitations.add(str(params.elicitation_id))
        return result

    async def elicitation_complete(self, params: acp.CompleteElicitationNotification) -> None:
        """`elicitation/complete`: the URL elicitation left `open_elicitations`; passed to
        `on_elicitation_complete`."""
        for session in self.sessions.values():
            session.state.open_elicitations.discard(params.elicitation_id)
        if self.on_elicitation_complete is not None:
            self.on_elicitation_complete(params.elicitation_id)

    async def auth_status_update(self, params: acpu.AuthStatusUpdateNotification) -> None:
        """`auth/status_update`: keep the agent's state in `auth_state` / `auth_accounts`
        and pass it to `on_auth_status`."""
        self._auth(params)

    def _auth(self, status: Any) -> None:
        self.auth_state = str(status.state)
        self.auth_accounts = list(status.accounts) if isinstance(status.accounts, list) else []
        if self.on_auth_status is not None:
            self.on_auth_status(status)

    async def auth_status(self) -> str:
        """Ask the agent for its authentication state (kept in `auth_state`)."""
        from acpstack.schema import v1_unstable as acpu

        self._auth(await self.agent.auth_status(acpu.AuthStatusRequest()))
        return str(self.auth_state)

    async def mcp_message(self, params: acpu.MessageMcpRequest) -> acpu.MessageMcpResponse:
        """`mcp/message`: a message for one of the MCP servers offered over ACP (`mcp_host`)."""
        return await self.mcp_host.handle(params)

    async def set_title(self, session_id: str, title: str) -> str:
        """Rename a session; returns the title the agent stored (also in its state)."""
        from acpstack.schema import v1_unstable as acpu

        result = await self.agent.session_set_title(
            acpu.SetSessionTitleRequest(session_id=session_id, title=title)
        )
        session = self.sessions.get(session_id)
        if session is not None:
            session.state.title = result.title
        return str(result.title)

    async def archive_session(self, session_id: str) -> None:
        """Archive a session (the agent closes it if active); it leaves `list_sessions()`."""
        from acpstack.schema import v1_unstable as acpu

        await self.agent.session_archive(acpu.ArchiveSessionRequest(session_id=session_id))
        self.sessions.pop(session_id, None)

    async def unarchive_session(self, session_id: str) -> None:
        """Unarchive a session: it is listed by `list_sessions()` again."""
        from acpstack.schema import v1_unstable as acpu

        await self.agent.session_unarchive(acpu.UnarchiveSessionRequest(session_id=session_id))

    async def session_status(self, session_id: str) -> str:
        """`open` (in the agent's memory) or `saved` (an unknown value counts as saved)."""
        from acpstack.schema import v1_unstable as acpu

        result = await self.agent.session_status(acpu.SessionStatusRequest(session_id=session_id))
        return "open" if result.status == "open" else "saved"

    async def list_sessions(
        self, *, cwd: str | None = None, archived: str | None = None
    ) -> list[acp.SessionInfo]:
        """Every session the agent lists (all pages). `archived`: None (the agent's default:
        not archived), "include" or "only" (needs an unstable connection)."""
        sessions: list[acp.SessionInfo] = []
        cursor: str | None = None
        while True:
            params: acp.ListSessionsRequest
            if archived is None:
                params = acp.ListSessionsRequest()
            else:
                from acpstack.schema import v1_unstable as acpu

                params = acpu.ListSessionsRequest(archived=archived)
            if cwd is not None:
                params.cwd = cwd
            if cursor is not None:
                params.cursor = cursor
            page = await self.agent.session_list(params)
            sessions.extend(page.sessions)
            cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
            if cursor is None:
                return sessions

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        *,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[acp.McpServer | acpu.McpServerAcp] = (),
        system_prompt: str | acpu.SystemPrompt | None = None,
    ) -> str:
        """Fork a session (unstable): the new session is tracked here; returns its id.
        `mcp_servers` and `system_prompt` as for `new_session`."""
        params = self._setup_params(
            "session/fork",
            mcp_servers,
            system_prompt,
            additional_directories,
            session_id=session_id,
            cwd=cwd,
        )
        result = await self.agent.session_fork(params)
        self.register_session(result.session_id, cwd, additional_directories)
        return str(result.session_id)


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


def _other_version(err: RequestError, asked: int) -> int | None:
    """After -32022: the newest version the agent listed that we speak too (None: none)."""
    if err.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(err.data, dict):
        return None
    supported = err.data.get("supported")
    common = (
        [v for v in supported if v in PROTOCOL_VERSIONS and v != asked]
        if isinstance(supported, list)
        else []
    )
    return max(common) if common else None
