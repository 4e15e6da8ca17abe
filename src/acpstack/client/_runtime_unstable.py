"""What `ClientRuntime` does for the newer methods (a mixin): elicitation, the agent's auth
status, MCP servers offered over ACP, and the session-management calls a UI needs
(title, archive, status, list with archived sessions, fork, providers).

The unstable calls need a connection opened with `unstable=True`; on a stable one they
raise `CapabilityError` (from the typed peer) without sending anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from acpstack.client._client import Client
from acpstack.client._elicitation import ElicitationPolicy, ElicitationReply, check_form_answer
from acpstack.client._mcp_host import McpHost
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError, capability_allows

if TYPE_CHECKING:
    from acpstack.client._runtime_sessions import ClientSession
    from acpstack.schema import v1_unstable as acpu

AuthStatusCallback = Callable[["acpu.AuthStatusUpdateNotification | acpu.AuthStatusResponse"], None]


class RuntimeExtras(Client):
    sessions: dict[str, ClientSession]
    elicitation_policy: ElicitationPolicy
    mcp_host: McpHost
    on_auth_status: AuthStatusCallback | None
    on_elicitation_complete: Callable[[str], None] | None
    # The agent's last reported authentication state (`auth/status` or `auth/status_update`).
    auth_state: str | None = None
    auth_accounts: list[Any]

    if TYPE_CHECKING:  # what ClientRuntime provides (declared for the type checker only)

        def register_session(
            self, session_id: str, cwd: str, additional_directories: Any = ()
        ) -> ClientSession:
            raise NotImplementedError

        def _setup_params(
            self,
            method: str,
            mcp_servers: Sequence[Any],
            system_prompt: Any,
            additional_directories: Sequence[str] = (),
            **fields: Any,
        ) -> Any:
            raise NotImplementedError

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

    # -- elicitation ----------------------------------------------------------------------

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

    # -- auth status --------------------------------------------------------------------

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

    # -- MCP servers offered over ACP ---------------------------------------------------------

    async def mcp_message(self, params: acpu.MessageMcpRequest) -> acpu.MessageMcpResponse:
        """`mcp/message`: a message for one of the MCP servers offered over ACP (`mcp_host`)."""
        return await self.mcp_host.handle(params)

    # -- session management -------------------------------------------------------------

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
