"""`ClientRuntime`: a complete ACP client that does the real work.

Real files (inside each session's workspace), real terminals, permission policies, the
session state built from `session/update`, and the authentication flow. Use it as the
`client` of `spawn_agent` / `connect_client`, then drive the agent with its methods.

This module holds the construction, `initialize` and the handlers of what the agent
sends; the rest are mixins with one job each: the session calls (`_runtime_sessions.py`),
files and terminals (`_runtime_local.py`), the unstable methods (`_runtime_unstable.py`)
and protocol v2 (`_runtime_v2.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

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
from acpstack.client._runtime_local import LocalWorkMethods
from acpstack.client._runtime_sessions import (
    AuthChooser,
    ClientSession,
    SessionMethods,
    TerminalLogin,
)
from acpstack.client._runtime_unstable import AuthStatusCallback, RuntimeExtras
from acpstack.client._runtime_v2 import V2ClientMethods, WireUpdateCallback
from acpstack.client._state import SessionState
from acpstack.local import (
    BufferProvider,
    FileSystem,
    TerminalManager,
    TerminalOutput,
    WriteObserver,
)
from acpstack.schema import PROTOCOL_VERSIONS
from acpstack.schema import v1 as acp
from acpstack.wire import (
    UNSUPPORTED_PROTOCOL_VERSION,
    DroppedMessage,
    RequestError,
)

log = logging.getLogger("acpstack.client")

UpdateCallback = Callable[[str, "acp.SessionUpdate"], None]
DroppedCallback = Callable[[DroppedMessage], None]


class ClientRuntime(SessionMethods, V2ClientMethods, LocalWorkMethods, RuntimeExtras):
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
    - `run_terminal_login`: given, `auth.terminal` is advertised, and a terminal method the
      user picks (`choose_auth_method`) is run through it, never sent to `authenticate`.
    - `protocol_version`: the ACP version asked for (1, or 2: the v2 draft, which a v1 agent
      answers with 1; a v2-only agent answers a request for 1 with -32022, and the runtime
      asks again for 2). Whatever the connection speaks, the calls, `SessionState` and
      `on_update` present one model of a session, in v1's shape (see `_v2_view.py`);
      `on_wire_update` gets every update as it arrived.
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
        on_wire_update: WireUpdateCallback | None = None,
        run_terminal_login: TerminalLogin | None = None,
    ) -> None:
        if protocol_version not in PROTOCOL_VERSIONS:
            raise ValueError(f"unknown ACP protocol version {protocol_version!r}")
        self.protocol_version: int = protocol_version
        self.on_wire_update: WireUpdateCallback | None = on_wire_update
        self._turns = {}
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

    # -- initialize (the session calls are in _runtime_sessions.py) -----------------------

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

    async def session_update(self, params: acp.SessionNotification) -> None:
        """`session/update`: apply the update to its session's state (kept aside for a
        session not known yet) and pass it to `on_update`."""
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
