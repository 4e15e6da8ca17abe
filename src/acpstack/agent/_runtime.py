"""`SessionAgent`: everything ACP asks of an agent except talking to the model.

The author subclasses it and implements `prompt(turn)`. Sessions persist in a
`SessionStore` (SQLite by default): `session/load` replays the history, `resume` does
not, `list` pages newest first, `close` cancels and frees, `delete` is idempotent,
unstable `fork` copies the history; load, resume, close, delete and archive of one
session run one at a time (`_lifecycle.py`). One turn runs at a time per session; a second
concurrent `session/prompt` is answered -32602. `session/cancel` (or `$/cancel_request`
of the prompt) cancels the turn, which then answers `stopReason: "cancelled"`.

This module holds the session lifecycle; the other handlers are mixins, one job each:
prompt turns (`_prompting.py`), authentication (`_auth.py`), modes and config options
(`_config.py`), the unstable methods (`_unstable.py`) and protocol v2 (`_v2_agent.py`).

With a store shared by several processes (`SessionLeases`, e.g. PostgreSQL) a session is
live in one process at a time (`_leases.py`): loading or resuming a session that is live
elsewhere, or a turn or a setting (mode, config option, title) in a session another process
has taken over, is answered `SESSION_BUSY` with `data: {"reason": "session_busy", "sessionId": ...}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, get_args

from acpstack._version import __version__
from acpstack.agent._auth import AuthMethods
from acpstack.agent._config import ConfigOptionMethods
from acpstack.agent._leases import hold, let_go, refused_as_busy, session_busy
from acpstack.agent._lifecycle import SessionLocks
from acpstack.agent._local_access import Fallback, LocalAccess
from acpstack.agent._prompting import PromptMethods
from acpstack.agent._requests import check_absolute, dirs, plain
from acpstack.agent._session import Session
from acpstack.agent._store import (
    SessionBusy,
    SessionChanges,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
)
from acpstack.agent._turn import Turn
from acpstack.agent._unstable import (
    SYSTEM_PROMPT,
    ProviderSettings,
    UnstableSessionMethods,
    unstable_capabilities,
)
from acpstack.agent._v2_agent import V2SessionMethods, session_not_found
from acpstack.rpc import ConnectionClosed
from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import INTERNAL_ERROR, RequestError

if TYPE_CHECKING:
    from acpstack.schema import v1_unstable as acpu

log = logging.getLogger("acpstack.agent")

OWNER = "owner"  # key in SessionRecord.meta: the principal that created the session


class SessionAgent(
    PromptMethods, AuthMethods, V2SessionMethods, ConfigOptionMethods, UnstableSessionMethods
):
    """Subclass and implement `prompt`. Everything else is handled.

    - `store`: where sessions persist (default: SQLite under the user's data directory).
    - `modes`: (id, name) pairs; advertised both as `modes` and as a `category: "mode"`
      config option, kept in sync as the protocol recommends.
    - `config_options`: extra select/boolean options (their `current_value` is the default).
    - `auth_methods`: when given, sessions answer -32000 until `authenticate` succeeds
      (override `check_authentication` to verify), and `logout` is supported.
    - `mcp`: connect to the MCP servers of each session with the official `mcp` SDK
      (the `acpstack[mcp]` extra); failures are per server, see `Session.mcp`.
      `mcp_http` / `mcp_sse` also accept (and advertise) http and sse servers; MCP
      servers a client offers over ACP (`{"type": "acp"}`) on unstable connections.
    - `fallback`: what the turn helpers do for a client that does not offer `fs` or
      `terminal`: "local" (default) reads, writes and runs commands in this process,
      inside the session's roots; "refuse" fails that tool call (`ClientCapabilityMissing`).
      A missing capability that ends a turn ends it with an explanation, never -32603.
    - unstable connections also get `session/set_title`, `archive`/`unarchive`, `status`,
      `fork`, `auth/status` (+ `auth/status_update`), `systemPrompt` (`append`, plus
      `system_prompt_modes`; see `Session.system_prompt`) and, with `providers`,
      `providers/*` (see `_unstable.py`).
    """

    name: str = "acpstack-agent"
    title: str | None = None
    # whose sessions these are (`acpstack serve` sets it from the token): new ones record
    # it, others' are unknown here (-32002; left out of lists). None: no owners.
    principal: str | None = None
    version: str = __version__
    protocol_versions: tuple[int, ...] = (1, 2)  # v2 (a draft) only when the client asks for it

    def __init__(
        self,
        *,
        store: SessionStore | None = None,
        modes: Sequence[tuple[str, str]] = (),
        config_options: Sequence[acp.SessionConfigOption] = (),
        auth_methods: Sequence[acp.AuthMethodAgent] = (),
        mcp: bool = False,
        mcp_http: bool = False,
        mcp_sse: bool = False,
        mcp_fail_fast: bool = False,
        prompt_capabilities: acp.PromptCapabilities | None = None,
        fallback: Fallback = "local",
        providers: ProviderSettings | None = None,
        system_prompt_modes: Sequence[str] = ("append",),
    ) -> None:
        if fallback not in get_args(Fallback):
            raise ValueError(f"fallback must be 'local' or 'refuse', not {fallback!r}")
        self.fallback: Fallback = fallback
        self._local: dict[str, LocalAccess] = {}  # per active session, made on first prompt
        self._lifecycle = SessionLocks()  # load, resume, close, delete, archive: one at a time
        self.store: SessionStore = store if store is not None else SqliteSessionStore()
        self.modes: list[tuple[str, str]] = list(modes)
        self.extra_config_options: list[acp.SessionConfigOption] = list(config_options)
        self.auth_methods: list[acp.AuthMethodAgent] = list(auth_methods)
        self.authenticated: bool = not self.auth_methods
        self.use_mcp: bool = mcp
        self.mcp_http: bool = mcp_http
        self.mcp_sse: bool = mcp_sse
        self.mcp_fail_fast: bool = mcp_fail_fast
        self.prompt_capabilities: acp.PromptCapabilities = (
            prompt_capabilities or acp.PromptCapabilities(embedded_context=True)
        )
        self.providers: ProviderSettings | None = providers
        self.system_prompt_modes: tuple[str, ...] = tuple(system_prompt_modes)
        self.sessions: dict[str, Session] = {}
        self.client_capabilities: acp.ClientCapabilities | None = None

    # -- what the author implements ------------------------------------------------------

    async def prompt(self, turn: Turn) -> acp.StopReason | None:
        """Answer one prompt. Return a stop reason (default "end_turn")."""
        raise RequestError.method_not_found("session/prompt")

    async def on_session_start(self, session: Session) -> None:
        """Called when a session becomes active (new, load, resume, fork)."""

    async def check_authentication(self, method_id: str) -> bool:
        """Verify the chosen method (e.g. look for credentials). Default: accept it."""
        return True

    def stored_mcp_server(self, server: Any) -> Any:
        """The JSON form of an MCP server configuration kept in the session record.
        Override to leave out secrets (header and environment values)."""
        return plain(server)

    # -- initialize ----------------------------------------------------------------------

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        """`initialize`: what this agent supports (sessions that load, resume, close, and list
        and delete as the store allows; `prompt_capabilities`; MCP; `auth_methods`), and on
        unstable connections the unstable capabilities too."""
        self.client_capabilities = (
            params.client_capabilities
            if isinstance(params.client_capabilities, acp.ClientCapabilities)
            else None
        )
        store = self.store
        session_caps = acp.SessionCapabilities(
            resume=acp.SessionResumeCapabilities(),
            close=acp.SessionCloseCapabilities(),
            additional_directories=acp.SessionAdditionalDirectoriesCapabilities(),
        )
        if store.supports_list:
            session_caps.list = acp.SessionListCapabilities()
        if store.supports_delete:
            session_caps.delete = acp.SessionDeleteCapabilities()
        caps = acp.AgentCapabilities(
            load_session=True,
            prompt_capabilities=self.prompt_capabilities,
            mcp_capabilities=acp.McpCapabilities(
                http=self.use_mcp and self.mcp_http, sse=self.use_mcp and self.mcp_sse
            ),
            session_capabilities=session_caps,
        )
        if self.auth_methods:
            caps.auth = acp.AgentAuthCapabilities(logout=acp.LogoutCapabilities())
        result = acp.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=caps,
            auth_methods=list(self.auth_methods),
            agent_info=acp.Implementation(name=self.name, version=self.version, title=self.title),
        )
        if self.client.unstable:
            result = unstable_capabilities(
                result,
                fork=store.supports_fork,
                archive=store.supports_list,
                auth_status=True,
                providers=self.providers is not None,
                system_prompt_modes=self.system_prompt_modes,
                mcp_acp=self.use_mcp,
            )
        return result

    # -- session lifecycle ---------------------------------------------------------------

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        """`session/new`: a new session, stored and active (`cwd` must be absolute); its
        modes and config options at their defaults. `on_session_start` runs after the answer."""
        self._require_auth()
        session = await self._open_new(
            params.cwd,
            params.additional_directories,
            params.mcp_servers,
            self.system_prompt_of(params),
        )
        return acp.NewSessionResponse(
            session_id=session.session_id,
            modes=self._mode_state(session),
            config_options=self._config_options(session),
        )

    async def _open_new(
        self, cwd: str, additional: Any, servers: Sequence[Any], system_prompt: Any
    ) -> Session:
        """A new session, stored and active (`servers`: v1 MCP server configurations)."""
        check_absolute(cwd, "cwd")
        record = SessionRecord(
            session_id=uuid.uuid4().hex,
            cwd=cwd,
            additional_directories=dirs(additional),
            mcp_servers=[self.stored_mcp_server(s) for s in servers],
            mode_id=self.modes[0][0] if self.modes else None,
            config_values=self._default_config_values(),
            meta={SYSTEM_PROMPT: system_prompt} if system_prompt else {},
        )
        if self.principal is not None:
            record.meta[OWNER] = self.principal
        self.store.create(record)
        hold(self.store, record.session_id)
        session = self._session_of(record)
        await self._activate(session, servers)
        return session

    def _session_of(self, record: SessionRecord) -> Session:
        """The live session of `record`, speaking the connection's protocol version."""
        if self.client.protocol_version == 2:
            from acpstack.agent._v2_session import V2Session

            return V2Session.from_record(record, self.client, self.store)
        return Session.from_record(record, self.client, self.store)

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        """`session/load`: reopen a stored session with the request's roots and MCP servers,
        and replay its whole history (prompts and updates) before answering."""
        self._require_auth()
        session = await self._reopen(
            params.session_id,
            params.cwd,
            params.additional_directories,
            params.mcp_servers,
            self.system_prompt_of(params),
        )
        await session.replay()  # the whole history goes out before the response
        return acp.LoadSessionResponse(
            modes=self._mode_state(session), config_options=self._config_options(session)
        )

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        """`session/resume`: reopen a stored session like `session/load`, without the replay."""
        self._require_auth()
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else []
        session = await self._reopen(
            params.session_id,
            params.cwd,
            params.additional_directories,
            servers,
            self.system_prompt_of(params),
        )
        return acp.ResumeSessionResponse(
            modes=self._mode_state(session), config_options=self._config_options(session)
        )

    async def session_list(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        """`session/list`: one page of stored sessions, newest first (only `cwd`'s if given);
        -32602 for a cursor this agent did not hand out."""
        records, next_cursor = self._list_records(params)
        infos = []
        for r in records:
            info = self.session_info(r)
            if r.additional_directories:
                info.additional_directories = list(r.additional_directories)
            infos.append(info)
        result = acp.ListSessionsResponse(sessions=infos)
        if next_cursor is not None:
            result.next_cursor = next_cursor
        return result

    def _list_records(self, params: Any) -> tuple[list[SessionRecord], str | None]:
        self._require_auth()
        cwd = params.cwd if isinstance(params.cwd, str) else None
        cursor = params.cursor if isinstance(params.cursor, str) else None
        archived: Any = self.archive_filter(params)
        try:
            records, next_cursor = self.store.list_sessions(
                cwd=cwd, cursor=cursor, archived=archived
            )
        except ValueError as exc:
            raise RequestError.invalid_params({"cursor": cursor}, str(exc)) from None
        # another principal's sessions are left out (a page may come out shorter)
        return [r for r in records if self._owns(r)], next_cursor

    def _owns(self, record: SessionRecord | None) -> bool:
        """Whether this connection's principal may see and drive the stored session."""
        return record is not None and (
            self.principal is None or record.meta.get(OWNER) == self.principal
        )

    async def session_close(self, params: acp.CloseSessionRequest) -> acp.CloseSessionResponse:
        """`session/close`: cancel the session's turn and free what it holds (MCP servers,
        local commands); it stays stored. Closing a stored but inactive session is a no-op."""
        await self._close(params.session_id)
        return acp.CloseSessionResponse()

    async def _close(self, session_id: str) -> None:
        async with self._lifecycle.exclusive(session_id):
            session = self.sessions.pop(session_id, None)
            if session is None:
                if not self._owns(self.store.get(session_id)):
                    raise self._not_found(session_id)
                return
            await self._stop(session)

    def _not_found(self, session_id: str) -> RequestError:
        if self.client.protocol_version == 2:
            return session_not_found(session_id)  # v2's data: {sessionId}
        return RequestError.resource_not_found(session_id)

    async def session_delete(self, params: acp.DeleteSessionRequest) -> acp.DeleteSessionResponse:
        """`session/delete`: close the session if active and remove it and its history from
        the store (deleting an unknown session is a no-op)."""
        await self._delete(params.session_id)
        return acp.DeleteSessionResponse()

    async def _delete(self, session_id: str) -> None:
        async with self._lifecycle.exclusive(session_id):
            session = self.sessions.pop(session_id, None)
            if session is not None:
                await self._stop(session)
            elif not self._owns(self.store.get(session_id)):
                return  # unknown (or another principal's): deleting it is a no-op
            with refused_as_busy(session_id):
                self.store.delete(session_id)

    async def session_fork(self, params: acpu.ForkSessionRequest) -> acpu.ForkSessionResponse:
        """Unstable `session/fork` (only routed on connections with unstable enabled)."""
        from acpstack.schema import v1_unstable as acpu

        self._require_auth()
        if not self._owns(self.store.get(params.session_id)):
            raise RequestError.resource_not_found(params.session_id)
        new_id = uuid.uuid4().hex
        extra = dirs(params.additional_directories)
        system_prompt = self.system_prompt_of(params)
        record = self.store.fork(
            params.session_id, new_id, cwd=params.cwd, additional_directories=extra
        )
        hold(self.store, new_id)
        if system_prompt is not None:
            record = self.store.update(new_id, meta={**record.meta, SYSTEM_PROMPT: system_prompt})
        session = self._session_of(record)
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else []
        await self._activate(session, servers)
        return acpu.ForkSessionResponse(session_id=new_id)

    async def _reopen(
        self,
        session_id: str,
        cwd: str,
        additional: Any,
        servers: Sequence[Any],
        system_prompt: dict[str, str] | None = None,
    ) -> Session:
        check_absolute(cwd, "cwd")
        async with self._lifecycle.exclusive(session_id):
            record = self.store.get(session_id)
            if record is None or not self._owns(record):
                raise self._not_found(session_id)
            hold(self.store, session_id)  # before the old copy lets go: no other process slips in
            try:
                old = self.sessions.pop(session_id, None)
                if old is not None:
                    await self._stop(old)
                # Each request carries the complete list of roots (ACP-INVENTORY §6.3.34).
                changes: SessionChanges = {
                    "cwd": cwd,
                    "additional_directories": dirs(additional),
                    "mcp_servers": [self.stored_mcp_server(s) for s in servers],
                }
                if system_prompt:
                    changes["meta"] = {**record.meta, SYSTEM_PROMPT: system_prompt}
                record = self.store.update(session_id, **changes)
            except BaseException:
                let_go(self.store, session_id)
                raise
            session = self._session_of(record)
            await self._activate(session, servers)
            return session

    async def _activate(self, session: Session, servers: Sequence[Any]) -> None:
        self.sessions[session.session_id] = session
        if self.use_mcp and servers:
            from acpstack.agent._mcp import McpConnections

            session.mcp = McpConnections(
                allow_http=self.mcp_http,
                allow_sse=self.mcp_sse,
                acp_client=self.client if self.client.unstable else None,
            )
            try:
                errors = await session.mcp.start(list(servers), fail_fast=self.mcp_fail_fast)
            except Exception as exc:
                await self._stop(session)
                self.sessions.pop(session.session_id, None)
                raise RequestError(
                    INTERNAL_ERROR,
                    f"MCP server failed to start: {exc}",
                    {"reason": "mcp_server_failed"},
                ) from None
            for name, error in errors.items():
                if error is not None:
                    log.warning("session %s: MCP server %r: %s", session.session_id, name, error)
        # Run the hook after the response is written (the client knows the session by then).
        start = asyncio.get_running_loop().create_task(self._session_started(session))
        session.start_task = start
        start.add_done_callback(functools.partial(_forget_start, session))

    async def _session_started(self, session: Session) -> None:
        try:
            await self.on_session_start(session)
        except ConnectionClosed:
            log.debug(
                "session %s: the client left before on_session_start finished", session.session_id
            )
        except Exception:
            log.exception("on_session_start failed for session %s", session.session_id)

    async def _stop(self, session: Session) -> None:
        start, session.start_task = session.start_task, None
        if start is not None and not start.done():
            start.cancel()  # the hook is owned by the session: cancelled and awaited here
            await asyncio.wait([start])  # (its cancellation is not ours: wait, don't await)
        await self._cancel_turn(session)
        if session.mcp is not None:
            with contextlib.suppress(Exception):
                await session.mcp.aclose()
            session.mcp = None
        local = self._local.pop(session.session_id, None)
        if local is not None:  # ends the commands the agent still runs for the session
            with contextlib.suppress(Exception):
                await local.aclose()
        let_go(self.store, session.session_id)

    async def _lost(self, session: Session) -> RequestError:
        """Another process took the session over (the store refused our write): it is no
        longer live here. The error for the request that found out."""
        if self.sessions.get(session.session_id) is session:
            del self.sessions[session.session_id]
            await self._stop(session)
        return session_busy(session.session_id)

    @contextlib.asynccontextmanager
    async def _writing(self, session: Session) -> AsyncIterator[None]:
        """Around a request's writes to a live session (a setting, its title): a write the
        store refuses because another process took the session over ends it here, and the
        request is answered SESSION_BUSY, as a turn is."""
        try:
            yield
        except SessionBusy:
            raise await self._lost(session) from None

    async def on_disconnect(self) -> None:
        """The client left: close every active session (their turns are cancelled)."""
        for session in list(self.sessions.values()):
            await self._stop(session)
        self.sessions.clear()

    async def set_title(self, session: Session, title: str | None) -> None:
        """Rename a session (sends `session_info_update`, stored for `session/list`)."""
        session.title = title
        session.save()
        await session.send(acp.SessionInfoUpdate(title=title))


def _forget_start(session: Session, start: asyncio.Task[None]) -> None:
    """The start hook finished: the session no longer keeps its Task (one per open session
    adds up over thousands); `_session_started` has logged any failure already."""
    if session.start_task is start:
        session.start_task = None
