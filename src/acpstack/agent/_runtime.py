"""`SessionAgent`: everything ACP asks of an agent except talking to the model.

The author subclasses it and implements `prompt(turn)`. Sessions persist in a
`SessionStore` (SQLite by default): `session/load` replays the history, `resume` does
not, `list` pages newest first, `close` cancels and frees, `delete` is idempotent,
unstable `fork` copies the history. One turn runs at a time per session; a second
concurrent `session/prompt` is answered -32602. `session/cancel` (or `$/cancel_request`
of the prompt) cancels the turn, which then answers `stopReason: "cancelled"`.

With a store shared by several processes (`SessionLeases`, e.g. PostgreSQL) a session is
live in one process at a time: new, load, resume and fork acquire it, and stopping it
(close, delete, the client leaving) releases it. Loading or resuming a session that is
live elsewhere, or a turn in a session another process has taken over, is answered
`SESSION_BUSY` with `data: {"reason": "session_busy", "sessionId": ...}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from acpstack._version import __version__
from acpstack.agent._agent import Agent
from acpstack.agent._session import Session
from acpstack.agent._store import (
    SessionBusy,
    SessionLeases,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
)
from acpstack.agent._turn import Turn
from acpstack.rpc import ConnectionClosed
from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import INTERNAL_ERROR, RequestError

log = logging.getLogger("acpstack.agent")

MODE_CONFIG_ID = "mode"
# Not defined by ACP: an implementation-defined code (-32001..-32099) for a session that
# is live in another process of a shared store. Retrying later may succeed.
SESSION_BUSY = -32010


def session_busy(session_id: str) -> RequestError:
    return RequestError(
        SESSION_BUSY,
        f"Session {session_id} is live on another node; try again once it is closed there",
        {"reason": "session_busy", "sessionId": session_id},
    )


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
      `mcp_http` / `mcp_sse` also accept (and advertise) http and sse servers.
    """

    name = "acpstack-agent"
    title: str | None = None
    version = __version__

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
    ) -> None:
        self.store: SessionStore = store if store is not None else SqliteSessionStore()
        self.modes = list(modes)
        self.extra_config_options = list(config_options)
        self.auth_methods = list(auth_methods)
        self.authenticated = not self.auth_methods
        self.use_mcp = mcp
        self.mcp_http = mcp_http
        self.mcp_sse = mcp_sse
        self.mcp_fail_fast = mcp_fail_fast
        self.prompt_capabilities = prompt_capabilities or acp.PromptCapabilities(
            embedded_context=True
        )
        self.sessions: dict[str, Session] = {}
        self.client_capabilities: acp.ClientCapabilities | None = None

    # -- what the author implements ----------------------------------------------------

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
        return _plain(server)

    # -- initialize and auth -------------------------------------------------------------

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
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
        if store.supports_fork and self.client.unstable:
            result = _with_fork(result)
        return result

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        if params.method_id not in {m.id for m in self.auth_methods}:
            raise RequestError.invalid_params(
                {"methodId": params.method_id}, f"Unknown authentication method: {params.method_id}"
            )
        if not await self.check_authentication(params.method_id):
            raise RequestError.auth_required({"authMethods": self._auth_methods_data()})
        self.authenticated = True
        return acp.AuthenticateResponse()

    async def logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        if not self.auth_methods:
            raise RequestError.method_not_found("logout")
        self.authenticated = False
        return acp.LogoutResponse()

    def _require_auth(self) -> None:
        if not self.authenticated:
            raise RequestError.auth_required({"authMethods": self._auth_methods_data()})

    def _auth_methods_data(self) -> list[dict[str, Any]]:
        return [{"id": m.id, "name": m.name} for m in self.auth_methods]

    # -- session lifecycle ---------------------------------------------------------------

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        self._require_auth()
        _check_absolute(params.cwd, "cwd")
        extra = _dirs(params.additional_directories)
        record = SessionRecord(
            session_id=uuid.uuid4().hex,
            cwd=params.cwd,
            additional_directories=extra,
            mcp_servers=[self.stored_mcp_server(s) for s in params.mcp_servers],
            mode_id=self.modes[0][0] if self.modes else None,
            config_values=self._default_config_values(),
        )
        self.store.create(record)
        self._hold(record.session_id)
        session = Session.from_record(record, self.client, self.store)
        await self._activate(session, params.mcp_servers)
        return acp.NewSessionResponse(
            session_id=session.session_id,
            modes=self._mode_state(session),
            config_options=self._config_options(session),
        )

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        self._require_auth()
        session = await self._reopen(
            params.session_id, params.cwd, params.additional_directories, params.mcp_servers
        )
        await session.replay()  # the whole history goes out before the response
        return acp.LoadSessionResponse(
            modes=self._mode_state(session), config_options=self._config_options(session)
        )

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        self._require_auth()
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else []
        session = await self._reopen(
            params.session_id, params.cwd, params.additional_directories, servers
        )
        return acp.ResumeSessionResponse(
            modes=self._mode_state(session), config_options=self._config_options(session)
        )

    async def session_list(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        self._require_auth()
        cwd = params.cwd if isinstance(params.cwd, str) else None
        cursor = params.cursor if isinstance(params.cursor, str) else None
        try:
            records, next_cursor = self.store.list_sessions(cwd=cwd, cursor=cursor)
        except ValueError as exc:
            raise RequestError.invalid_params({"cursor": cursor}, str(exc)) from None
        infos = []
        for r in records:
            info = acp.SessionInfo(
                session_id=r.session_id, cwd=r.cwd, title=r.title, updated_at=r.updated_at or None
            )
            if r.additional_directories:
                info.additional_directories = list(r.additional_directories)
            infos.append(info)
        result = acp.ListSessionsResponse(sessions=infos)
        if next_cursor is not None:
            result.next_cursor = next_cursor
        return result

    async def session_close(self, params: acp.CloseSessionRequest) -> acp.CloseSessionResponse:
        session = self.sessions.pop(params.session_id, None)
        if session is None:
            if self.store.get(params.session_id) is None:
                raise RequestError.resource_not_found(params.session_id)
            return acp.CloseSessionResponse()
        await self._stop(session)
        return acp.CloseSessionResponse()

    async def session_delete(self, params: acp.DeleteSessionRequest) -> acp.DeleteSessionResponse:
        session = self.sessions.pop(params.session_id, None)
        if session is not None:
            await self._stop(session)
        try:
            self.store.delete(params.session_id)
        except SessionBusy:
            raise session_busy(params.session_id) from None
        return acp.DeleteSessionResponse()

    async def session_fork(self, params: Any) -> Any:
        """Unstable `session/fork` (only routed on connections with unstable enabled)."""
        from acpstack.schema import v1_unstable as acpu

        self._require_auth()
        if self.store.get(params.session_id) is None:
            raise RequestError.resource_not_found(params.session_id)
        new_id = uuid.uuid4().hex
        extra = _dirs(params.additional_directories)
        record = self.store.fork(
            params.session_id, new_id, cwd=params.cwd, additional_directories=extra
        )
        self._hold(new_id)
        session = Session.from_record(record, self.client, self.store)
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else []
        await self._activate(session, servers)
        return acpu.ForkSessionResponse(session_id=new_id)

    async def _reopen(
        self, session_id: str, cwd: str, additional: Any, servers: Sequence[Any]
    ) -> Session:
        _check_absolute(cwd, "cwd")
        record = self.store.get(session_id)
        if record is None:
            raise RequestError.resource_not_found(session_id)
        self._hold(session_id)  # before the old copy lets go, so no other process slips in
        try:
            old = self.sessions.pop(session_id, None)
            if old is not None:
                await self._stop(old)
            # Each request carries the complete list of roots (ACP-INVENTORY §6.3.34).
            record = self.store.update(
                session_id,
                cwd=cwd,
                additional_directories=_dirs(additional),
                mcp_servers=[self.stored_mcp_server(s) for s in servers],
            )
        except BaseException:
            self._let_go(session_id)
            raise
        session = Session.from_record(record, self.client, self.store)
        await self._activate(session, servers)
        return session

    async def _activate(self, session: Session, servers: Sequence[Any]) -> None:
        self.sessions[session.session_id] = session
        if self.use_mcp and servers:
            from acpstack.agent._mcp import McpConnections

            session.mcp = McpConnections(allow_http=self.mcp_http, allow_sse=self.mcp_sse)
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
        session.start_task = asyncio.get_running_loop().create_task(self._session_started(session))

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
        if session.start_task is not None and not session.start_task.done():
            session.start_task.cancel()
        await self._cancel_turn(session)
        if session.mcp is not None:
            with contextlib.suppress(Exception):
                await session.mcp.aclose()
            session.mcp = None
        self._let_go(session.session_id)

    def _hold(self, session_id: str) -> None:
        """Make the session live in this process (a shared store's lease), or SESSION_BUSY."""
        if isinstance(self.store, SessionLeases):
            try:
                self.store.acquire(session_id)
            except SessionBusy:
                raise session_busy(session_id) from None
            except KeyError:
                raise RequestError.resource_not_found(session_id) from None

    def _let_go(self, session_id: str) -> None:
        if isinstance(self.store, SessionLeases):
            try:
                self.store.release(session_id)
            except Exception:  # the lease ends with this process's presence anyway
                log.warning(
                    "session %s: could not release it in the store", session_id, exc_info=True
                )

    async def on_disconnect(self) -> None:
        for session in list(self.sessions.values()):
            await self._stop(session)
        self.sessions.clear()

    # -- turns ---------------------------------------------------------------------------

    def _active(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        return session

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        session = self._active(params.session_id)
        try:
            return await self._turn(session, params)
        except SessionBusy:
            # Another process took the session over (the store refused our write): it is
            # no longer live here.
            if self.sessions.get(session.session_id) is session:
                del self.sessions[session.session_id]
                await self._stop(session)
            raise session_busy(session.session_id) from None

    async def _turn(self, session: Session, params: acp.PromptRequest) -> acp.PromptResponse:
        if session.turn_task is not None:
            raise RequestError.invalid_params(
                {"sessionId": session.session_id},
                "A prompt turn is already running in this session",
            )
        task = asyncio.current_task()
        assert task is not None
        session.turn_task = task
        session.cancel_requested = False
        session.record_prompt(list(params.prompt))
        try:
            stop = await self.prompt(Turn(session, list(params.prompt)))
        except asyncio.CancelledError:
            # session/cancel, $/cancel_request or shutdown: the turn ends as "cancelled".
            return acp.PromptResponse(stop_reason="cancelled")
        except Exception:
            if session.cancel_requested:
                return acp.PromptResponse(stop_reason="cancelled")
            raise
        finally:
            session.turn_task = None
        if session.cancel_requested:
            return acp.PromptResponse(stop_reason="cancelled")
        return acp.PromptResponse(stop_reason=stop or "end_turn")

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        session = self.sessions.get(params.session_id)
        if session is not None:
            await self._cancel_turn(session, wait=False)

    async def _cancel_turn(self, session: Session, *, wait: bool = True) -> None:
        task = session.turn_task
        if task is None or task.done():
            return
        session.cancel_requested = True
        task.cancel()
        if wait and task is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(task), 10)

    # -- modes and config options ----------------------------------------------------------

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
        session = self._active(params.session_id)
        await self._set_mode(session, params.mode_id)
        return acp.SetSessionModeResponse()

    async def _set_mode(self, session: Session, mode_id: str) -> None:
        if mode_id not in {i for i, _ in self.modes}:
            raise RequestError.invalid_params({"modeId": mode_id}, f"Unknown mode: {mode_id}")
        session.mode_id = mode_id
        session.save()
        await session.send(acp.CurrentModeUpdate(current_mode_id=mode_id))
        options = self._config_options(session)
        if options:
            await session.send(acp.ConfigOptionUpdate(config_options=options))

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        session = self._active(params.session_id)
        if params.config_id == MODE_CONFIG_ID and self.modes:
            if not isinstance(params.value, str):
                raise RequestError.invalid_params(
                    {"configId": params.config_id}, "The mode option takes a value id"
                )
            await self._set_mode(session, params.value)
        else:
            option = next((o for o in self.extra_config_options if o.id == params.config_id), None)
            if option is None:
                raise RequestError.invalid_params(
                    {"configId": params.config_id}, f"Unknown config option: {params.config_id}"
                )
            if (option.type == "boolean") != isinstance(params.value, bool):
                raise RequestError.invalid_params(
                    {"configId": params.config_id}, "Wrong value type for this option"
                )
            if option.type == "select" and params.value not in _select_values(option):
                raise RequestError.invalid_params(
                    {"configId": params.config_id, "value": params.value},
                    "Unknown value for this option",
                )
            session.config_values[option.id] = params.value
            session.save()
        return acp.SetSessionConfigOptionResponse(
            config_options=self._config_options(session) or []
        )

    async def set_title(self, session: Session, title: str | None) -> None:
        """Rename a session (sends `session_info_update`, stored for `session/list`)."""
        session.title = title
        session.save()
        await session.send(acp.SessionInfoUpdate(title=title))


def _with_fork(result: acp.InitializeResponse) -> Any:
    """The same answer in the unstable types, advertising unstable `session/fork`."""
    from acpstack.schema import v1_unstable as acpu

    unstable = msgspec.json.decode(msgspec.json.encode(result), type=acpu.InitializeResponse)
    caps = unstable.agent_capabilities
    assert isinstance(caps, acpu.AgentCapabilities) and isinstance(
        caps.session_capabilities, acpu.SessionCapabilities
    )
    caps.session_capabilities.fork = acpu.SessionForkCapabilities()
    return unstable


def _select_values(option: acp.SessionConfigOption) -> set[str]:
    values: set[str] = set()
    for item in option.options if isinstance(option.options, list) else []:
        if isinstance(item, acp.SessionConfigSelectGroup):
            values.update(o.value for o in item.options)
        else:
            values.add(item.value)
    return values


def _check_absolute(path: str, what: str) -> None:
    if not path.startswith("/") and not (len(path) > 2 and path[1] == ":" and path[2] in "\\/"):
        raise RequestError.invalid_params(
            {"path": f"$.params.{what}", "value": path}, f"{what} must be an absolute path"
        )


def _dirs(value: Any) -> list[str]:
    dirs = list(value) if isinstance(value, list) else []
    for d in dirs:
        _check_absolute(d, "additionalDirectories")
    return dirs


def _plain(server: Any) -> Any:
    return msgspec.to_builtins(server) if server is not UNSET else None
