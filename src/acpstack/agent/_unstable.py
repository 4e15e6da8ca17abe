"""The unstable ACP methods `SessionAgent` implements over its store (a mixin).

`session/set_title`, `session/archive` / `unarchive`, `session/status`, `auth/status` (and
the `auth/status_update` it sends when the state changes), `providers/*` (through a
`ProviderSettings` the author supplies), `systemPrompt` on session setup, and `mcp/message`
notifications for the MCP servers a client offers over ACP. They are routed only on
connections opened with `unstable=True`; the capabilities are advertised there only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import UNSET

from acpstack.agent._agent import Agent
from acpstack.agent._leases import refused_as_busy
from acpstack.agent._lifecycle import SessionLocks
from acpstack.agent._store import ARCHIVE_FILTERS, SessionRecord, SessionStore
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from acpstack.agent._session import Session
    from acpstack.schema import v1_unstable as acpu

log = logging.getLogger("acpstack.agent")

SYSTEM_PROMPT = "system_prompt"  # key in SessionRecord.meta: {"mode": ..., "text": ...}


class ProviderSettings(Protocol):
    """Where an agent keeps its LLM provider settings, for `providers/list|set|disable`.

    Raise `ValueError` for an unknown provider or a setting that cannot be applied (the
    client gets -32602 with its message)."""

    def list_providers(self) -> list[acpu.ProviderInfo]:
        """The providers the agent knows, with their current settings (`providers/list`)."""
        ...

    def set_provider(
        self, provider_id: str, api_type: str, base_url: str, headers: dict[str, str]
    ) -> None:
        """Use `provider_id` with this API type, base URL and headers (`providers/set`)."""
        ...

    def disable_provider(self, provider_id: str) -> None:
        """Stop using `provider_id` (`providers/disable`)."""
        ...


class UnstableSessionMethods(Agent):
    """Handlers of the unstable methods, over the attributes `SessionAgent` defines."""

    store: SessionStore
    sessions: dict[str, Session]
    auth_methods: list[acp.AuthMethodAgent]
    authenticated: bool
    providers: ProviderSettings | None
    system_prompt_modes: tuple[str, ...]
    _lifecycle: SessionLocks
    _reported_auth: str | None = None

    async def _stop(self, session: Session) -> None:
        raise NotImplementedError

    if TYPE_CHECKING:  # what SessionAgent provides (declared for the type checker only)

        def _writing(self, session: Session) -> AbstractAsyncContextManager[None]:
            raise NotImplementedError

        def _owns(self, record: SessionRecord | None) -> bool:
            raise NotImplementedError

    def _record(self, session_id: str) -> SessionRecord:
        record = self.store.get(session_id)
        if record is None or not self._owns(record):  # another principal's: unknown
            raise RequestError.resource_not_found(session_id)
        return record

    # -- sessions ---------------------------------------------------------------------

    async def session_set_title(
        self, params: acpu.SetSessionTitleRequest
    ) -> acpu.SetSessionTitleResponse:
        """`session/set_title`: rename a stored session (whitespace collapsed, at most 200
        characters; -32602 when empty); an active one also sends `session_info_update`."""
        from acpstack.schema import v1_unstable as acpu

        title = " ".join(params.title.split())[:200]
        if not title:
            raise RequestError.invalid_params({"title": params.title}, "The title is empty")
        self._record(params.session_id)
        session = self.sessions.get(params.session_id)
        if session is not None:
            session.title = title
            async with self._writing(session):
                session.save()
                await session.send(acp.SessionInfoUpdate(title=title))
        else:
            with refused_as_busy(params.session_id):
                self.store.update(params.session_id, title=title)
        return acpu.SetSessionTitleResponse(title=title)

    async def session_archive(
        self, params: acpu.ArchiveSessionRequest
    ) -> acpu.ArchiveSessionResponse:
        """`session/archive`: close the session if active and leave it out of
        `session/list` unless archived sessions are asked for."""
        from acpstack.schema import v1_unstable as acpu

        async with self._lifecycle.exclusive(params.session_id):
            self._record(params.session_id)
            session = self.sessions.pop(params.session_id, None)
            if session is not None:  # as if session/close: the turn is cancelled, resources freed
                await self._stop(session)
            with refused_as_busy(params.session_id):
                self.store.update(params.session_id, archived=True)
        return acpu.ArchiveSessionResponse()

    async def session_unarchive(
        self, params: acpu.UnarchiveSessionRequest
    ) -> acpu.UnarchiveSessionResponse:
        """`session/unarchive`: list the session again."""
        from acpstack.schema import v1_unstable as acpu

        self._record(params.session_id)
        with refused_as_busy(params.session_id):
            self.store.update(params.session_id, archived=False)
        return acpu.UnarchiveSessionResponse()

    async def session_status(self, params: acpu.SessionStatusRequest) -> acpu.SessionStatusResponse:
        """`session/status`: "open" for an active session, "saved" for a stored one."""
        from acpstack.schema import v1_unstable as acpu

        if params.session_id in self.sessions:
            return acpu.SessionStatusResponse(status="open")
        self._record(params.session_id)
        return acpu.SessionStatusResponse(status="saved")

    def archive_filter(self, params: Any) -> str:
        """The `archived` filter of a `session/list` request (-32602 for one we do not know)."""
        value = getattr(params, "archived", UNSET)
        if value is UNSET or value is None:
            return "exclude"
        if value not in ARCHIVE_FILTERS:
            raise RequestError.invalid_params(
                {"archived": value}, f"Unsupported archive filter: {value!r}"
            )
        return str(value)

    def session_info(self, record: SessionRecord) -> acp.SessionInfo:
        """One `session/list` entry; on unstable connections with `archived`, as required
        of agents that advertise `sessionCapabilities.archive`."""
        fields: dict[str, Any] = {
            "session_id": record.session_id,
            "cwd": record.cwd,
            "title": record.title,
            "updated_at": record.updated_at or None,
        }
        if not self.client.unstable:
            return acp.SessionInfo(**fields)
        from acpstack.schema import v1_unstable as acpu

        return acpu.SessionInfo(**fields, archived=record.archived)

    # -- system prompt ----------------------------------------------------------------

    def system_prompt_of(self, params: Any) -> dict[str, str] | None:
        """The `systemPrompt` of a session setup request as stored ({"mode", "text"}), or
        None. Anything this agent cannot apply is refused (-32602) before the session
        changes, as the protocol asks."""
        prompt = getattr(params, "system_prompt", UNSET)
        if prompt is UNSET or prompt is None:
            return None
        if prompt.mode not in ("append", *self.system_prompt_modes):
            raise RequestError.invalid_params(
                {"systemPrompt": {"mode": prompt.mode}},
                f"Unsupported system prompt mode: {prompt.mode!r}",
            )
        if not prompt.content or not all(isinstance(b, acp.TextContent) for b in prompt.content):
            raise RequestError.invalid_params(
                {"path": "$.params.systemPrompt.content"},
                "The system prompt must be a non-empty list of text blocks",
            )
        return {"mode": prompt.mode, "text": "\n\n".join(b.text for b in prompt.content)}

    # -- authentication -----------------------------------------------------------------

    def auth_state(self) -> str:
        """`authenticated`, `unauthenticated` or `not_required` (for `auth/status`)."""
        if not self.auth_methods:
            return "not_required"
        return "authenticated" if self.authenticated else "unauthenticated"

    async def auth_status(self, params: acpu.AuthStatusRequest) -> acpu.AuthStatusResponse:
        """`auth/status`: the authentication state (see `auth_state`)."""
        from acpstack.schema import v1_unstable as acpu

        self._reported_auth = self.auth_state()
        return acpu.AuthStatusResponse(state=self._reported_auth)

    async def report_auth_status(self) -> None:
        """Send `auth/status_update` if the state changed since it was last reported (only
        on unstable connections: the method does not exist elsewhere)."""
        if not self.client.unstable or self.auth_state() == self._reported_auth:
            return
        from acpstack.schema import v1_unstable as acpu

        self._reported_auth = self.auth_state()
        await self.client.auth_status_update(
            acpu.AuthStatusUpdateNotification(state=self._reported_auth)
        )

    # -- providers ----------------------------------------------------------------------

    def _providers(self) -> ProviderSettings:
        if self.providers is None:
            raise RequestError.method_not_found("providers/list")
        return self.providers

    async def providers_list(self, params: acpu.ListProvidersRequest) -> acpu.ListProvidersResponse:
        """`providers/list` through `providers` (-32601 without it)."""
        from acpstack.schema import v1_unstable as acpu

        return acpu.ListProvidersResponse(providers=self._providers().list_providers())

    async def providers_set(self, params: acpu.SetProviderRequest) -> acpu.SetProviderResponse:
        """`providers/set` through `providers` (-32602 when it raises ValueError)."""
        from acpstack.schema import v1_unstable as acpu

        headers = params.headers if isinstance(params.headers, dict) else {}
        try:
            self._providers().set_provider(
                params.provider_id, params.api_type, params.base_url, headers
            )
        except ValueError as exc:
            raise RequestError.invalid_params(
                {"providerId": params.provider_id}, str(exc)
            ) from None
        return acpu.SetProviderResponse()

    async def providers_disable(
        self, params: acpu.DisableProviderRequest
    ) -> acpu.DisableProviderResponse:
        """`providers/disable` through `providers` (-32602 when it raises ValueError)."""
        from acpstack.schema import v1_unstable as acpu

        try:
            self._providers().disable_provider(params.provider_id)
        except ValueError as exc:
            raise RequestError.invalid_params(
                {"providerId": params.provider_id}, str(exc)
            ) from None
        return acpu.DisableProviderResponse()

    # -- MCP over ACP (this agent is the consumer) ------------------------------------------

    async def mcp_message_notification(self, params: acpu.MessageMcpNotification) -> None:
        """A notification from a client's MCP server for one of our active MCP requests."""
        for session in list(self.sessions.values()):
            if session.mcp is not None and session.mcp.deliver_acp_notification(params):
                return
        log.debug("mcp/message notification for no active request (server %s)", params.server_id)


def unstable_capabilities(
    result: acp.InitializeResponse,
    *,
    fork: bool,
    archive: bool,
    auth_status: bool,
    providers: bool,
    system_prompt_modes: tuple[str, ...],
    mcp_acp: bool,
) -> Any:
    """The same `initialize` answer in the unstable types, advertising the unstable
    methods this agent supports."""
    import msgspec

    from acpstack.schema import v1_unstable as acpu

    unstable = msgspec.json.decode(msgspec.json.encode(result), type=acpu.InitializeResponse)
    caps = unstable.agent_capabilities
    assert isinstance(caps, acpu.AgentCapabilities)
    assert isinstance(caps.session_capabilities, acpu.SessionCapabilities)
    session_caps = caps.session_capabilities
    session_caps.status = acpu.SessionStatusCapabilities()
    session_caps.title = acpu.SessionTitleCapabilities()
    if fork:
        session_caps.fork = acpu.SessionForkCapabilities()
    if archive:
        session_caps.archive = acpu.SessionArchiveCapabilities()
    extra = [m for m in system_prompt_modes if m != "append"]
    session_caps.system_prompt = acpu.SessionSystemPromptCapabilities()
    if "override" in extra:
        session_caps.system_prompt.mode = acpu.SessionSystemPromptModeCapabilities(
            override=acpu.SessionSystemPromptOverrideCapabilities()
        )
    if auth_status:
        auth = caps.auth if isinstance(caps.auth, acpu.AgentAuthCapabilities) else None
        caps.auth = auth or acpu.AgentAuthCapabilities()
        caps.auth.status = acpu.AuthStatusCapabilities()
    if providers:
        caps.providers = acpu.ProvidersCapabilities()
    if mcp_acp and isinstance(caps.mcp_capabilities, acpu.McpCapabilities):
        caps.mcp_capabilities.acp = True
    return unstable
