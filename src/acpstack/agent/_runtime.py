"""`SessionAgent`: everything ACP asks of an agent except talking to the model.

The author subclasses it and implements `prompt(turn)`. Sessions persist in a
`SessionStore` (SQLite by default): `session/load` replays the history, `resume` does
not, `list` pages newest first, `close` cancels and frees, `delete` is idempotent,
unstable `fork` copies the history; load, resume, close, delete and archive of one
session run one at a time (`_lifecycle.py`). One turn runs at a time per session; a second
concurrent `session/prompt` is answered -32602. `session/cancel` (or `$/cancel_request`
of the prompt) cancels the turn, which then answers `stopReason: "cancelled"`.

One class, in this order: construction and `initialize`; the session lifecycle; prompt
turns (`session/prompt` runs the author's `prompt` as one turn, at most one at a time per
session; a turn whose session another process took over answers `SESSION_BUSY`);
authentication (`authenticate`, `logout`; v2's `auth/login` and `auth/logout` go the same
way: with `auth_methods`, session requests answer -32000 until one succeeds); protocol v2
(its shapes are mapped by `_v2_agent.py`); modes and config options (the modes are also
the config option of category "mode", the only form v2 has); and the unstable methods.
Helpers with a job of their own are composed: the store's writer (`_writer.py`), the
cancel registry (`_cancel.py`), the local fallback (`_local_access.py`).

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
import os
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import msgspec
from msgspec import UNSET, UnsetType

from acpstack._tasks import cancel_and_wait, outlive_cancels
from acpstack._version import __version__
from acpstack.agent._agent import Agent
from acpstack.agent._leases import hold, let_go, refused_as_busy, session_busy
from acpstack.agent._lifecycle import SessionLocks
from acpstack.agent._local_access import Fallback, LocalAccess
from acpstack.agent._requests import check_absolute, dirs, plain, select_values
from acpstack.agent._session import (
    AFTER_KEY,
    CURSORS_KEY,
    OPERATION_KEY,
    OPERATIONS_CAPABILITY,
    RESENT_KEY,
    Session,
    new_id,
    store_unavailable,
)
from acpstack.agent._store import (
    ARCHIVE_FILTERS,
    SessionBusy,
    SessionChanges,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
    StoreUnavailable,
)
from acpstack.agent._turn import Turn
from acpstack.agent._turn_extras import ClientCapabilityMissing
from acpstack.agent._unstable import (
    SYSTEM_PROMPT,
    ProviderSettings,
    unstable_capabilities,
)
from acpstack.agent._v2_agent import (
    _v2,
    mcp_servers_from_v2,
    prompt_from_v2,
    session_not_found,
)
from acpstack.agent._writer import writer_for
from acpstack.rpc import ConnectionClosed
from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import INTERNAL_ERROR, CapabilityError, RequestError

if TYPE_CHECKING:
    from acpstack.schema import v1_unstable as acpu
    from acpstack.schema import v2

log = logging.getLogger("acpstack.agent")
T = TypeVar("T")
MODE_CONFIG_ID = "mode"
OWNER = "owner"  # key in SessionRecord.meta: the principal that created the session


class SessionAgent(Agent):
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
        # The client asked for delivery cursors (`CURSORS_KEY` in initialize's `_meta`).
        self.cursors: bool = False

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
        self.cursors = isinstance(params.meta, dict) and params.meta.get(CURSORS_KEY) is True
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
            # a prompt sent again after a failover runs only if no process began it; a
            # client that asks gets each update's seq and resumes after the last it has
            meta={OPERATIONS_CAPABILITY: True, CURSORS_KEY: True},
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
        await self._stored(self.store.create, record)
        await hold(self.store, record.session_id)
        session = self._session_of(record)
        await self._activate(session, servers)
        return session

    async def _stored(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A call of the store, off the event loop (its writer's thread), in order with the
        events being written; a store that is down answers `store_unavailable`."""
        try:
            return await writer_for(self.store).call(fn, *args, **kwargs)
        except StoreUnavailable as exc:
            raise store_unavailable(exc) from None

    async def _stored_about(
        self, session_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        """`_stored` for a call about one session (it waits only for that session's
        events being written)."""
        try:
            return await writer_for(self.store).call_about(session_id, fn, *args, **kwargs)
        except StoreUnavailable as exc:
            raise store_unavailable(exc) from None

    def _session_of(self, record: SessionRecord) -> Session:
        """The live session of `record`, speaking the connection's protocol version."""
        if self.client.protocol_version == 2:
            from acpstack.agent._v2_session import V2Session

            session: Session = V2Session.from_record(record, self.client, self.store)
        else:
            session = Session.from_record(record, self.client, self.store)
        session.stamp_seq = self.cursors
        return session

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
        """`session/resume`: reopen a stored session like `session/load`, without the replay;
        with a delivery cursor (`_meta["acpstack/after"]`), the updates recorded after it
        are sent first (what the client missed when its server went away)."""
        self._require_auth()
        after = _cursor_of(params.meta)
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else []
        session = await self._reopen(
            params.session_id,
            params.cwd,
            params.additional_directories,
            servers,
            self.system_prompt_of(params),
        )
        if after is not None:
            await session.catch_up(after)
        return acp.ResumeSessionResponse(
            modes=self._mode_state(session), config_options=self._config_options(session)
        )

    async def session_list(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        """`session/list`: one page of stored sessions, newest first (only `cwd`'s if given);
        -32602 for a cursor this agent did not hand out."""
        records, next_cursor = await self._list_records(params)
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

    async def _list_records(self, params: Any) -> tuple[list[SessionRecord], str | None]:
        self._require_auth()
        cwd = params.cwd if isinstance(params.cwd, str) else None
        cursor = params.cursor if isinstance(params.cursor, str) else None
        archived: Any = self.archive_filter(params)
        try:
            records, next_cursor = await self._stored(
                self.store.list_sessions, cwd=cwd, cursor=cursor, archived=archived
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
                if not self._owns(await self._stored(self.store.get, session_id)):
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
            elif not self._owns(await self._stored(self.store.get, session_id)):
                return  # unknown (or another principal's): deleting it is a no-op
            with refused_as_busy(session_id):
                await self._stored(self.store.delete, session_id)

    async def session_fork(self, params: acpu.ForkSessionRequest) -> acpu.ForkSessionResponse:
        """Unstable `session/fork` (only routed on connections with unstable enabled)."""
        from acpstack.schema import v1_unstable as acpu

        self._require_auth()
        if not self._owns(await self._stored(self.store.get, params.session_id)):
            raise RequestError.resource_not_found(params.session_id)
        fork_id = uuid.uuid4().hex
        extra = dirs(params.additional_directories)
        system_prompt = self.system_prompt_of(params)
        source = self.sessions.get(params.session_id)
        if source is not None:
            await source.flush()  # the fork copies every update sent so far
        record = await self._stored(
            self.store.fork,
            params.session_id,
            fork_id,
            cwd=params.cwd,
            additional_directories=extra,
        )
        await hold(self.store, fork_id)
        if system_prompt is not None:
            meta = {**record.meta, SYSTEM_PROMPT: system_prompt}
            record = await self._stored(self.store.update, fork_id, meta=meta)
        session = self._session_of(record)
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else []
        await self._activate(session, servers)
        return acpu.ForkSessionResponse(session_id=fork_id)

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
            # held before the old copy lets go: no other process slips in
            record, last_seq = await self._hold_stored(session_id)
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
                # A client reattaching after a failover sends what is stored: no write then
                # (with PostgreSQL each write waits for the disk, per session reattached).
                if any(getattr(record, key) != value for key, value in changes.items()):
                    record = await self._stored_about(
                        session_id, self.store.update, session_id, **changes
                    )
            except BaseException:
                await let_go(self.store, session_id)
                raise
            session = self._session_of(record)
            session.stored_seq = last_seq
            await self._activate(session, servers)
            return session

    async def _hold_stored(self, session_id: str) -> tuple[SessionRecord, int | None]:
        """The stored record of a session this principal may drive, made live in this
        process (a shared store's lease), and the seq of its last event when the store said
        (else None): in one statement where the store can (PostgreSQL's `acquire_owned`: a
        failover resumes hundreds at once), else, or when that one did not take it, read
        first and held next, which says why not."""
        take: Callable[..., tuple[SessionRecord, int] | None] | None
        take = getattr(self.store, "acquire_owned", None)
        if take is not None:
            taken: tuple[SessionRecord, int] | None = await self._stored_about(
                session_id, take, session_id, OWNER, self.principal
            )
            if taken is not None:
                return taken
        record = await self._stored_about(session_id, self.store.get, session_id)
        if record is None or not self._owns(record):
            raise self._not_found(session_id)
        await hold(self.store, session_id)
        return record, None

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
        await session.aclose()
        await let_go(self.store, session.session_id)

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
        request is answered SESSION_BUSY, as a turn is. The updates the request sent reach
        the client before its answer; a store that is down answers `store_unavailable`."""
        try:
            yield
            await session.flush()
        except SessionBusy:
            raise await self._lost(session) from None
        except StoreUnavailable as exc:
            await session.drain()
            session.clear_failure()
            raise store_unavailable(exc) from None

    async def on_disconnect(self) -> None:
        """The client left: close every active session (their turns are cancelled)."""
        for session in list(self.sessions.values()):
            await self._stop(session)
        self.sessions.clear()

    async def set_title(self, session: Session, title: str | None) -> None:
        """Rename a session (sends `session_info_update`, stored for `session/list`)."""
        session.title = title
        await session.save()
        await session.send(acp.SessionInfoUpdate(title=title))

    # -- prompt turns ----------------------------------------------------------------------

    def _active(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise self._not_found(session_id)
        return session

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        """`session/prompt`: run one turn of the author's `prompt` in an active session
        (-32602 while another turn runs in it)."""
        session = self._active(params.session_id)
        meta = params.meta if isinstance(params.meta, dict) else {}
        operation = meta.get(OPERATION_KEY)
        operation = operation if isinstance(operation, str) and operation else None
        try:
            if operation is not None and meta.get(RESENT_KEY) is True:
                await self._refuse_if_began(session, operation)
            turn = self._start_turn(session, list(params.prompt), operation_id=operation)
            if operation is not None:
                # Stored before the turn starts: a prompt sent again after a failover
                # is run only when no process began it (`_refuse_if_began`).
                await session.flush()
            task = asyncio.current_task()
            assert task is not None
            session.turn_task = task
            try:
                return acp.PromptResponse(stop_reason=await self._run_turn(turn))
            finally:
                session.turn_task = None
        except SessionBusy:  # another process took the session over (a shared store)
            raise await self._lost(session) from None

    async def _refuse_if_began(self, session: Session, operation: str) -> None:
        """A prompt the client sent again after losing its connection: it runs unless a
        process (this one, or one that died) already began it; then its outcome is
        unknown and it fails as lost, never run twice."""
        if await session.began(operation):
            raise RequestError(
                INTERNAL_ERROR,
                "this prompt began before the connection broke; its outcome is unknown",
                {"reason": "connection_lost", "method": "session/prompt", "operationId": operation},
            )

    def _start_turn(
        self,
        session: Session,
        prompt: list[acp.ContentBlock],
        message_id: str | None = None,
        operation_id: str | None = None,
    ) -> Turn:
        """Record the prompt and make its turn (-32602 while another turn runs)."""
        if session.turn_task is not None:
            raise RequestError.invalid_params(
                {"sessionId": session.session_id},
                "A prompt turn is already running in this session",
            )
        session.cancel_requested = False
        session.clear_failure()  # a store that failed the last turn is tried again
        session.record_prompt(prompt, message_id, operation_id)
        local = self._local.get(session.session_id)
        if local is None:
            local = LocalAccess(session.session_id, session.cwd, session.additional_directories)
            self._local[session.session_id] = local
        return Turn(session, prompt, fallback=self.fallback, local=local)

    async def _run_turn(self, turn: Turn) -> acp.StopReason:
        """Run the author's `prompt`: its stop reason, "cancelled" once cancelled (the
        turn's task cancelled by session/cancel, $/cancel_request or shutdown)."""
        session = turn.session
        stop: acp.StopReason | None = None
        missing: ClientCapabilityMissing | CapabilityError | None = None
        failure: Exception | None = None
        try:
            stop = await self.prompt(turn)
        except asyncio.CancelledError:
            if not session.cancel_requested and session.client.connection.closed:
                raise  # the connection is going away: not the client's cancel, nobody to answer
            stop = "cancelled"  # session/cancel or $/cancel_request: the client asked
        except (ClientCapabilityMissing, CapabilityError) as exc:
            missing = exc
        except Exception as exc:
            failure = exc
        # The end of the turn (its last updates, then the answer it owes) runs to its end
        # even when the client's cancel lands in it; a cancel nobody asked for (shutdown)
        # still ends it.
        end = asyncio.ensure_future(self._end_turn(turn, stop, missing, failure))
        return await outlive_cancels(end, lambda: session.cancel_requested)

    async def _end_turn(
        self,
        turn: Turn,
        stop: acp.StopReason | None,
        missing: ClientCapabilityMissing | CapabilityError | None,
        failure: Exception | None,
    ) -> acp.StopReason:
        session = turn.session
        if missing is not None and not session.cancel_requested:
            stop = await _missing_capability(turn, missing)
        elif isinstance(failure, StoreUnavailable):
            await _end_unstored(session)
            raise store_unavailable(failure) from None
        elif failure is not None and not session.cancel_requested:
            with contextlib.suppress(Exception):  # none is left pending
                await turn.fail_unfinished("The agent stopped on an error.")
            await session.drain()
            session.clear_failure()
            raise failure
        if stop == "cancelled" or session.cancel_requested:
            # No tool call of a cancelled turn stays pending or in progress: each ends
            # `cancelled` (v2; `failed` with the cancelled marker on v1).
            with contextlib.suppress(Exception):
                await turn.cancel_unfinished()
        # Every update of the turn reaches the client before its answer.
        try:
            await session.flush()
        except StoreUnavailable as exc:
            await _end_unstored(session)
            raise store_unavailable(exc) from None
        if session.cancel_requested:
            return "cancelled"
        return stop or "end_turn"

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        """`session/cancel`: cancel the session's running turn, if any (its prompt then
        answers "cancelled"); an unknown session is ignored (it is a notification)."""
        session = self.sessions.get(params.session_id)
        if session is not None:
            await self._cancel_turn(session, wait=False)

    async def _cancel_turn(self, session: Session, *, wait: bool = True) -> None:
        task = session.turn_task
        if task is None or task.done():
            return
        session.cancel_requested = True
        if wait and task is not asyncio.current_task():
            await cancel_and_wait(task, timeout=10)
        else:
            task.cancel()

    # -- authentication ----------------------------------------------------------------------

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        """`authenticate`: log in with one of `auth_methods` (-32602 for a method not
        offered, -32000 when `check_authentication` refuses it)."""
        await self._login(params.method_id)
        return acp.AuthenticateResponse()

    async def logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        """`logout`: session requests need `authenticate` again (-32601 without
        `auth_methods`)."""
        await self._logout("logout")
        return acp.LogoutResponse()

    async def _login(self, method_id: str) -> None:
        if method_id not in {m.id for m in self.auth_methods}:
            raise RequestError.invalid_params(
                {"methodId": method_id}, f"Unknown authentication method: {method_id}"
            )
        if not await self.check_authentication(method_id):
            raise RequestError.auth_required({"authMethods": self._auth_methods_data()})
        self.authenticated = True
        await self.report_auth_status()

    async def _logout(self, method: str) -> None:
        if not self.auth_methods:
            raise RequestError.method_not_found(method)
        self.authenticated = False
        await self.report_auth_status()

    def _require_auth(self) -> None:
        if not self.authenticated:
            raise RequestError.auth_required({"authMethods": self._auth_methods_data()})

    def _auth_methods_data(self) -> list[dict[str, Any]]:
        return [{"id": m.id, "name": m.name} for m in self.auth_methods]

    # -- protocol v2 ---------------------------------------------------------------------------

    async def v2_initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        """v2 `initialize`: `info`, and one `capabilities` with what the sessions support
        (prompt content, MCP, additional directories, delete as the store allows)."""
        from acpstack.schema import v2

        self.cursors = isinstance(params.meta, dict) and params.meta.get(CURSORS_KEY) is True
        prompt = self.prompt_capabilities
        session = v2.SessionCapabilities(
            prompt=v2.PromptCapabilities(
                image=v2.PromptImageCapabilities() if prompt.image is True else UNSET,
                audio=v2.PromptAudioCapabilities() if prompt.audio is True else UNSET,
                embedded_context=v2.PromptEmbeddedContextCapabilities()
                if prompt.embedded_context is True
                else UNSET,
            ),
            additional_directories=v2.SessionAdditionalDirectoriesCapabilities(),
        )
        if self.use_mcp:
            session.mcp = v2.McpCapabilities(stdio=v2.McpStdioCapabilities())
            if self.mcp_http:
                session.mcp.http = v2.McpHttpCapabilities()
        if self.store.supports_delete:
            session.delete = v2.SessionDeleteCapabilities()
        methods: list[v2.AuthMethod] = [
            v2.AuthMethodAgent(
                method_id=m.id,
                name=m.name,
                description=m.description if isinstance(m.description, str) else UNSET,
            )
            for m in self.auth_methods
        ]
        return v2.InitializeResponse(
            protocol_version=2,
            info=v2.Implementation(name=self.name, version=self.version, title=self.title),
            capabilities=v2.AgentCapabilities(session=session, meta={CURSORS_KEY: True}),
            auth_methods=methods,
        )

    async def v2_auth_login(self, params: v2.LoginAuthRequest) -> v2.LoginAuthResponse:
        """v2 `auth/login` (v1's `authenticate`); -32601 without `auth_methods`."""
        from acpstack.schema import v2

        if not self.auth_methods:
            raise RequestError.method_not_found("auth/login")
        await self._login(params.method_id)
        return v2.LoginAuthResponse()

    async def v2_auth_logout(self, params: v2.LogoutAuthRequest) -> v2.LogoutAuthResponse:
        """v2 `auth/logout` (v1's `logout`); -32601 without `auth_methods`."""
        from acpstack.schema import v2

        await self._logout("auth/logout")
        return v2.LogoutAuthResponse()

    async def v2_session_new(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        """v2 `session/new`: as v1's, with the modes as the config option of category "mode"."""
        from acpstack.schema import v2

        self._require_auth()
        servers = mcp_servers_from_v2(params.mcp_servers)
        session = await self._open_new(params.cwd, params.additional_directories, servers, None)
        return v2.NewSessionResponse(
            session_id=session.session_id, config_options=self._v2_options(session)
        )

    async def v2_session_resume(self, params: v2.ResumeSessionRequest) -> v2.ResumeSessionResponse:
        """Resume; with `replayFrom: {type: "start"}` the history is replayed first. Then
        the state snapshot (idle: nothing runs in a session just resumed), then the answer."""
        from acpstack.schema import v2

        self._require_auth()
        after = _cursor_of(params.meta)
        replay = params.replay_from
        if replay not in (UNSET, None) and not isinstance(replay, v2.ReplayFromStart):
            kind = replay.get("type") if isinstance(replay, dict) else None
            raise RequestError.invalid_params(
                {"replayFrom": {"type": kind}}, f"Unsupported replayFrom: {kind!r}"
            )
        servers = mcp_servers_from_v2(params.mcp_servers)
        session = await self._reopen(
            params.session_id, params.cwd, params.additional_directories, servers
        )
        v2_session = _v2(session)
        if replay not in (UNSET, None):
            await v2_session.replay()
        elif after is not None:
            await v2_session.catch_up(after)
        await v2_session.send_state("idle")
        return v2.ResumeSessionResponse(config_options=self._v2_options(session))

    async def v2_session_list(self, params: v2.ListSessionsRequest) -> v2.ListSessionsResponse:
        """v2 `session/list`: one page of stored sessions, newest first, as in v1."""
        from acpstack.schema import v2

        records, next_cursor = await self._list_records(params)
        infos = [
            v2.SessionInfo(
                session_id=r.session_id,
                cwd=r.cwd,
                title=r.title,
                updated_at=r.updated_at or None,
                additional_directories=list(r.additional_directories) or UNSET,
            )
            for r in records
        ]
        return v2.ListSessionsResponse(sessions=infos, next_cursor=next_cursor or UNSET)

    async def v2_session_close(self, params: v2.CloseSessionRequest) -> v2.CloseSessionResponse:
        """v2 `session/close`: as v1's (-32002 with `{sessionId}` for an unknown session)."""
        from acpstack.schema import v2

        await self._close(params.session_id)
        return v2.CloseSessionResponse()

    async def v2_session_delete(self, params: v2.DeleteSessionRequest) -> v2.DeleteSessionResponse:
        """v2 `session/delete`: as v1's."""
        from acpstack.schema import v2

        await self._delete(params.session_id)
        return v2.DeleteSessionResponse()

    async def v2_session_set_config_option(
        self, params: v2.SetSessionConfigOptionRequest
    ) -> v2.SetSessionConfigOptionResponse:
        """v2 `session/set_config_option` (`id` and `boolean` values; the mode option sets
        the mode): the session's config options after the change."""
        from acpstack.schema import v2

        session = self._active(params.session_id)
        if params.type not in ("id", "boolean"):
            raise RequestError.invalid_params(
                {"type": params.type}, f"Unsupported config option value type: {params.type!r}"
            )
        async with self._writing(session):
            await self._set_config_value(session, params.config_id, params.value)
        options = self._v2_options(session)
        return v2.SetSessionConfigOptionResponse(
            config_options=[] if isinstance(options, UnsetType) else options
        )

    async def v2_session_prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        """Accept the prompt: echo it as the user's message, report `running`, answer with
        its id; the turn then runs in its own task and ends with an idle state update."""
        from acpstack.schema import v2

        session = _v2(self._active(params.session_id))
        message_id = new_id()
        try:
            turn = self._start_turn(session, prompt_from_v2(params.prompt), message_id)
        except SessionBusy:
            raise await self._lost(session) from None
        echo = {"sessionUpdate": "user_message", "messageId": message_id}
        echo["content"] = msgspec.to_builtins(params.prompt)
        await session.send_live(echo)
        await session.send_state("running")
        session.turn_task = asyncio.get_running_loop().create_task(self._v2_turn(turn))
        return v2.PromptResponse(message_id=message_id)

    async def _v2_turn(self, turn: Turn) -> None:
        session = _v2(turn.session)
        error: dict[str, Any] | None = None
        lost = False
        stop: str
        try:
            stop = await self._run_turn(turn)
        except RequestError as err:
            stop, error = "error", err.to_dict()
        except SessionBusy:
            stop, lost = "error", True
        except Exception:
            correlation = os.urandom(6).hex()
            log.exception("the turn failed (correlation id %s)", correlation)
            stop = "error"
            error = RequestError.internal_error({"correlationId": correlation}).to_dict()
        finally:
            session.turn_task = None
        if lost:  # another process took the session over: it ends here
            error = (await self._lost(session)).to_dict()
        with contextlib.suppress(ConnectionClosed):
            await session.send_state("idle", stop_reason=stop, error=error)

    async def v2_session_cancel(self, params: v2.CancelSessionNotification) -> None:
        """v2 `session/cancel`: cancel the running turn; it ends with an idle state update
        whose stop reason is "cancelled"."""
        session = self.sessions.get(params.session_id)
        if session is not None:
            await self._cancel_turn(session, wait=False)

    async def v2_tool_call_cancel(
        self, params: v2.CancelToolCallRequest
    ) -> v2.CancelToolCallResponse:
        """v2 `tool_call/cancel`: cancel the work of a tool call that advertises
        `capabilities.cancel` (inside `ToolCallHandle.cancellable()`, or running a command
        of `Turn.run_command`). Answered once accepted; the call's final status
        (`cancelled`) follows, and the turn goes on. -32602 for a tool call that is
        unknown, final or not cancellable (as v2 asks); -32002 for an unknown session."""
        from acpstack.schema import v2

        cancels = self._active(params.session_id).cancels
        if cancels is None or not cancels.cancel_tool(params.tool_call_id):
            raise RequestError.invalid_params(
                {"toolCallId": params.tool_call_id},
                "Unknown, finished or not cancellable tool call",
            )
        return v2.CancelToolCallResponse()

    async def v2_terminal_cancel(
        self, params: v2.CancelTerminalRequest
    ) -> v2.CancelTerminalResponse:
        """v2 `terminal/cancel`: stop the command of an agent terminal that advertises
        `capabilities.cancel` (a command `Turn.run_command` runs); its `terminal_update`
        with the exit status follows. -32602 for a terminal that is unknown, exited or not
        cancellable (as v2 asks); -32002 for an unknown session."""
        from acpstack.schema import v2

        cancels = self._active(params.session_id).cancels
        if cancels is None or not cancels.cancel_terminal(params.terminal_id):
            raise RequestError.invalid_params(
                {"terminalId": params.terminal_id}, "Unknown, exited or not cancellable terminal"
            )
        return v2.CancelTerminalResponse()

    def _v2_options(self, session: Session) -> list[Any] | UnsetType:
        from acpstack.events import v2 as events_v2
        from acpstack.schema import v2

        options = self._config_options(session)
        if not options:
            return UNSET
        plain = [events_v2.config_option_to_v2(o) for o in msgspec.to_builtins(options)]
        return msgspec.convert(plain, list[v2.SessionConfigOption])

    # -- modes and config options -------------------------------------------------------------

    def _default_config_values(self) -> dict[str, Any]:
        return {o.id: o.current_value for o in self.extra_config_options}

    def _mode_state(self, session: Session) -> acp.SessionModeState | None:
        if not self.modes:
            return None
        current = session.mode_id or self.modes[0][0]
        return acp.SessionModeState(
            current_mode_id=current,
            available_modes=[acp.SessionMode(id=i, name=n) for i, n in self.modes],
        )

    def _config_options(self, session: Session) -> list[acp.SessionConfigOption] | None:
        options: list[acp.SessionConfigOption] = []
        if self.modes:
            current = session.mode_id or self.modes[0][0]
            choices = [acp.SessionConfigSelectOption(value=i, name=n) for i, n in self.modes]
            options.append(
                acp.SessionConfigOption(
                    id=MODE_CONFIG_ID,
                    name="Mode",
                    category="mode",
                    type="select",
                    current_value=current,
                    options=choices,
                )
            )
        for option in self.extra_config_options:
            current_value = session.config_values.get(option.id, option.current_value)
            options.append(msgspec.structs.replace(option, current_value=current_value))
        return options or None

    async def session_set_mode(
        self, params: acp.SetSessionModeRequest
    ) -> acp.SetSessionModeResponse:
        """`session/set_mode`: switch an active session to one of `modes` (-32602 for an
        unknown one); sends `current_mode_update` and the config options."""
        session = self._active(params.session_id)
        async with self._writing(session):
            await self._set_mode(session, params.mode_id)
        return acp.SetSessionModeResponse()

    async def _set_mode(self, session: Session, mode_id: str) -> None:
        if mode_id not in {i for i, _ in self.modes}:
            raise RequestError.invalid_params({"modeId": mode_id}, f"Unknown mode: {mode_id}")
        session.mode_id = mode_id
        await session.save()
        await session.send(acp.CurrentModeUpdate(current_mode_id=mode_id))
        options = self._config_options(session)
        if options:
            await session.send(acp.ConfigOptionUpdate(config_options=options))

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        """`session/set_config_option`: set one option of an active session (the "mode"
        option switches the mode); -32602 for an unknown option or a wrong value. Answers
        every option with its current value."""
        session = self._active(params.session_id)
        async with self._writing(session):
            await self._set_config_value(session, params.config_id, params.value)
        return acp.SetSessionConfigOptionResponse(
            config_options=self._config_options(session) or []
        )

    async def _set_config_value(self, session: Session, config_id: str, value: Any) -> None:
        """Set one option (the mode option switches the mode); -32602 for what is unknown."""
        if config_id == MODE_CONFIG_ID and self.modes:
            if not isinstance(value, str):
                raise RequestError.invalid_params(
                    {"configId": config_id}, "The mode option takes a value id"
                )
            await self._set_mode(session, value)
            return
        option = next((o for o in self.extra_config_options if o.id == config_id), None)
        if option is None:
            raise RequestError.invalid_params(
                {"configId": config_id}, f"Unknown config option: {config_id}"
            )
        if (option.type == "boolean") != isinstance(value, bool):
            raise RequestError.invalid_params(
                {"configId": config_id}, "Wrong value type for this option"
            )
        if option.type == "select" and value not in select_values(option):
            raise RequestError.invalid_params(
                {"configId": config_id, "value": value}, "Unknown value for this option"
            )
        session.config_values[option.id] = value
        await session.save()

    # -- the unstable methods ------------------------------------------------------------------

    _reported_auth: str | None = None

    async def _record(self, session_id: str) -> SessionRecord:
        record = await self._stored(self.store.get, session_id)
        if record is None or not self._owns(record):  # another principal's: unknown
            raise RequestError.resource_not_found(session_id)
        return record

    async def session_set_title(
        self, params: acpu.SetSessionTitleRequest
    ) -> acpu.SetSessionTitleResponse:
        """`session/set_title`: rename a stored session (whitespace collapsed, at most 200
        characters; -32602 when empty); an active one also sends `session_info_update`."""
        from acpstack.schema import v1_unstable as acpu

        title = " ".join(params.title.split())[:200]
        if not title:
            raise RequestError.invalid_params({"title": params.title}, "The title is empty")
        await self._record(params.session_id)
        session = self.sessions.get(params.session_id)
        if session is not None:
            session.title = title
            async with self._writing(session):
                await session.save()
                await session.send(acp.SessionInfoUpdate(title=title))
        else:
            with refused_as_busy(params.session_id):
                await self._stored(self.store.update, params.session_id, title=title)
        return acpu.SetSessionTitleResponse(title=title)

    async def session_archive(
        self, params: acpu.ArchiveSessionRequest
    ) -> acpu.ArchiveSessionResponse:
        """`session/archive`: close the session if active and leave it out of
        `session/list` unless archived sessions are asked for."""
        from acpstack.schema import v1_unstable as acpu

        async with self._lifecycle.exclusive(params.session_id):
            await self._record(params.session_id)
            session = self.sessions.pop(params.session_id, None)
            if session is not None:  # as if session/close: the turn is cancelled, resources freed
                await self._stop(session)
            with refused_as_busy(params.session_id):
                await self._stored(self.store.update, params.session_id, archived=True)
        return acpu.ArchiveSessionResponse()

    async def session_unarchive(
        self, params: acpu.UnarchiveSessionRequest
    ) -> acpu.UnarchiveSessionResponse:
        """`session/unarchive`: list the session again."""
        from acpstack.schema import v1_unstable as acpu

        await self._record(params.session_id)
        with refused_as_busy(params.session_id):
            await self._stored(self.store.update, params.session_id, archived=False)
        return acpu.UnarchiveSessionResponse()

    async def session_status(self, params: acpu.SessionStatusRequest) -> acpu.SessionStatusResponse:
        """`session/status`: "open" for an active session, "saved" for a stored one."""
        from acpstack.schema import v1_unstable as acpu

        if params.session_id in self.sessions:
            return acpu.SessionStatusResponse(status="open")
        await self._record(params.session_id)
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

    async def mcp_message_notification(self, params: acpu.MessageMcpNotification) -> None:
        """A notification from a client's MCP server for one of our active MCP requests."""
        for session in list(self.sessions.values()):
            if session.mcp is not None and session.mcp.deliver_acp_notification(params):
                return
        log.debug("mcp/message notification for no active request (server %s)", params.server_id)


def _forget_start(session: Session, start: asyncio.Task[None]) -> None:
    """The start hook finished: the session no longer keeps its Task (one per open session
    adds up over thousands); `_session_started` has logged any failure already."""
    if session.start_task is start:
        session.start_task = None


async def _end_unstored(session: Session) -> None:
    """The store failed during the turn: what was stored is delivered, the rest dropped;
    the next turn tries the store again."""
    await session.drain()
    session.clear_failure()


async def _missing_capability(
    turn: Turn, exc: ClientCapabilityMissing | CapabilityError
) -> acp.StopReason:
    """A turn that needed something the client does not offer ends normally, and says why
    (a client must not see -32603 for what it chose not to offer)."""
    message = exc.message if isinstance(exc, ClientCapabilityMissing) else str(exc)
    log.warning("session %s: %s", turn.session.session_id, message)
    await turn.fail_unfinished(message)
    await turn.say(f"\n\nI could not finish this: {message}\n")
    return "end_turn"


def _cursor_of(meta: Any) -> int | None:
    """The delivery cursor of a `session/resume` (`_meta["acpstack/after"]`), if any."""
    if not isinstance(meta, dict) or AFTER_KEY not in meta:
        return None
    after = meta[AFTER_KEY]
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise RequestError.invalid_params(
            {"_meta": {AFTER_KEY: after}}, f"{AFTER_KEY} must be a position (an integer >= 0)"
        )
    return after
