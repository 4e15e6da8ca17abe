"""The protocol version 2 handlers of `SessionAgent` (a mixin): a thin surface over the
same sessions, store and turns as v1.

What v2 changes for the agent:
- `initialize` answers `info` and one `capabilities` (sessions under `session`);
- `auth/login` and `auth/logout` instead of `authenticate` and `logout`;
- `session/prompt` answers at once with the user message's id; the turn runs on, reported
  by `state_update` (running, requires_action, idle with the stop reason, or `error`
  with the error object when the turn failed);
- `session/resume` with `replayFrom: {type: "start"}` instead of `session/load`;
- modes are the config option of category "mode";
- no client file system or terminals: `Turn` does that work on the agent's machine;
- `tool_call/cancel` and `terminal/cancel` cancel one tool call or command (`_cancel.py`).

v2 types load only when a connection negotiates version 2 (imported in the handlers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, UnsetType

from acpstack.agent._store import SessionBusy
from acpstack.rpc import ConnectionClosed
from acpstack.schema import v1 as acp
from acpstack.wire import RESOURCE_NOT_FOUND, RequestError

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer
    from acpstack.agent._session import Session
    from acpstack.agent._store import SessionRecord, SessionStore
    from acpstack.agent._turn import Turn
    from acpstack.agent._v2_session import V2Session
    from acpstack.schema import v2

log = logging.getLogger("acpstack.agent")


class V2SessionMethods:
    """`v2_*` handlers over what `SessionAgent` defines (see `_runtime.py`)."""

    client: ClientPeer
    name: str
    title: str | None
    version: str
    store: SessionStore
    sessions: dict[str, Session]
    auth_methods: list[acp.AuthMethodAgent]
    prompt_capabilities: acp.PromptCapabilities
    use_mcp: bool
    mcp_http: bool

    if TYPE_CHECKING:  # what SessionAgent provides (declared for the type checker only)

        def _require_auth(self) -> None:
            raise NotImplementedError

        async def _login(self, method_id: str) -> None:
            raise NotImplementedError

        async def _logout(self, method: str) -> None:
            raise NotImplementedError

        async def _open_new(
            self, cwd: str, additional: Any, servers: Sequence[Any], system_prompt: Any
        ) -> Session:
            raise NotImplementedError

        async def _reopen(
            self,
            session_id: str,
            cwd: str,
            additional: Any,
            servers: Sequence[Any],
            system_prompt: dict[str, str] | None = None,
        ) -> Session:
            raise NotImplementedError

        async def _list_records(self, params: Any) -> tuple[list[SessionRecord], str | None]:
            raise NotImplementedError

        async def _close(self, session_id: str) -> None:
            raise NotImplementedError

        async def _delete(self, session_id: str) -> None:
            raise NotImplementedError

        def _active(self, session_id: str) -> Session:
            raise NotImplementedError

        def _start_turn(
            self, session: Session, prompt: list[acp.ContentBlock], message_id: str | None = None
        ) -> Turn:
            raise NotImplementedError

        async def _run_turn(self, turn: Turn) -> str:
            raise NotImplementedError

        async def _cancel_turn(self, session: Session, *, wait: bool = True) -> None:
            raise NotImplementedError

        async def _lost(self, session: Session) -> RequestError:
            raise NotImplementedError

        def _writing(self, session: Session) -> contextlib.AbstractAsyncContextManager[None]:
            raise NotImplementedError

        def _config_options(self, session: Session) -> list[acp.SessionConfigOption] | None:
            raise NotImplementedError

        async def _set_config_value(self, session: Session, config_id: str, value: Any) -> None:
            raise NotImplementedError

    # -- initialize and auth ----------------------------------------------------------------

    async def v2_initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        """v2 `initialize`: `info`, and one `capabilities` with what the sessions support
        (prompt content, MCP, additional directories, delete as the store allows)."""
        from acpstack.schema import v2

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
            capabilities=v2.AgentCapabilities(session=session),
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

    # -- sessions ------------------------------------------------------------------------

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

    # -- turns ---------------------------------------------------------------------------

    async def v2_session_prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        """Accept the prompt: echo it as the user's message, report `running`, answer with
        its id; the turn then runs in its own task and ends with an idle state update."""
        from acpstack.schema import v2

        session = _v2(self._active(params.session_id))
        message_id = uuid.uuid4().hex
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

    # -- helpers -------------------------------------------------------------------------

    def _v2_options(self, session: Session) -> list[Any] | UnsetType:
        from acpstack.agent._v2_convert import config_option_to_v2
        from acpstack.schema import v2

        options = self._config_options(session)
        if not options:
            return UNSET
        plain = [config_option_to_v2(o) for o in msgspec.to_builtins(options)]
        return msgspec.convert(plain, list[v2.SessionConfigOption])


def _v2(session: Session) -> V2Session:
    from acpstack.agent._v2_session import V2Session

    assert isinstance(session, V2Session), "a v2 handler got a session of a v1 connection"
    return session


def session_not_found(session_id: str) -> RequestError:
    """v2's answer for an unknown session: -32002 with `{sessionId}`."""
    return RequestError(
        RESOURCE_NOT_FOUND, f"Session not found: {session_id}", {"sessionId": session_id}
    )


def prompt_from_v2(blocks: Sequence[Any]) -> list[acp.ContentBlock]:
    """A v2 prompt as the turn's content blocks (the same five kinds; a kind v2 added
    later is left out, and said so in the log)."""
    out: list[acp.ContentBlock] = []
    for block in blocks:
        plain = msgspec.to_builtins(block) if isinstance(block, msgspec.Struct) else block
        try:
            out.append(msgspec.convert(plain, acp.ContentBlock))
        except msgspec.ValidationError:
            log.warning("left out a prompt block of an unknown kind: %.80r", plain)
    return out


def mcp_servers_from_v2(servers: Any) -> list[Any]:
    """v2 MCP server configurations as the v1 ones the MCP connections take (stdio and
    http; `args`, `env` and `headers` are optional in v2)."""
    out: list[Any] = []
    for server in servers if isinstance(servers, list) else []:
        plain = msgspec.to_builtins(server) if isinstance(server, msgspec.Struct) else server
        if not isinstance(plain, dict):
            continue
        kind = plain.get("type")
        if kind == "stdio":
            plain = {k: v for k, v in plain.items() if k != "type"}
            plain.setdefault("args", [])
            plain.setdefault("env", [])
        elif kind == "http":
            plain.setdefault("headers", [])
        else:
            raise RequestError.invalid_params(
                {"mcpServers": {"type": kind}}, f"Unsupported MCP server type: {kind!r}"
            )
        out.append(plain)
    # (decoded as v1's session/new decodes them: stdio and http have their own structs)
    return list(msgspec.convert({"cwd": "/", "mcpServers": out}, acp.NewSessionRequest).mcp_servers)


__all__ = ["V2SessionMethods", "mcp_servers_from_v2", "prompt_from_v2", "session_not_found"]
