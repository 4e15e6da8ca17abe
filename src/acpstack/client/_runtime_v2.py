"""What `ClientRuntime` does on a protocol version 2 connection (a mixin).

The runtime's calls keep their v1 signatures and results (the model, see `_v2_view.py`);
on v2 they are sent in v2's shape:
- `load_session` is `session/resume` with `replayFrom: {type: "start"}`;
- `prompt` sends the prompt, which the agent acknowledges at once, and returns when the
  agent reports the turn's end (the idle `state_update` that follows it), with the stop
  reason as `PromptResponse.stop_reason`; a turn that ended with stop reason `error`
  raises the `RequestError` the agent reported, as a failed v1 prompt does;
- authentication is `auth/login`;
- what the agent asks (`session/request_permission` with a title and a subject,
  `elicitation/*`) goes to the same policies as on v1, in the model's shape.
- `cancel_tool_call` and `cancel_terminal` (v2 only) cancel one tool call or stop one
  agent terminal that advertises `capabilities.cancel`; the turn goes on.

v2 types load only here, for a v2 connection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from acpstack.client import _v2_values as values
from acpstack.rpc import ConnectionClosed
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError, RequestError

if TYPE_CHECKING:
    from acpstack.client._client import AgentPeer
    from acpstack.client._runtime_sessions import ClientSession
    from acpstack.client._state import AgentTerminal, SessionState, ToolCallState
    from acpstack.schema import v2

log = logging.getLogger("acpstack.client")
WireUpdateCallback = Callable[[str, Any], None]
_command_ids = itertools.count(1)


@dataclass
class TurnWait:
    """A `prompt` waiting for the end of its turn: the first idle state update after the
    agent reported `running` (which it must when the turn's work starts) or after it
    answered the prompt. An idle before both is a snapshot of earlier work."""

    done: asyncio.Future[tuple[str | None, Any]]
    started: bool = False  # running (or requires_action) reported since the prompt was sent
    acked: bool = False  # the prompt was answered (accepted)


class V2ClientMethods:
    agent: AgentPeer
    sessions: dict[str, ClientSession]
    on_update: Callable[[str, Any], None] | None
    on_wire_update: WireUpdateCallback | None
    _turns: dict[str, TurnWait]

    if TYPE_CHECKING:  # what ClientRuntime provides (declared for the type checker only)

        def _state_of(self, session_id: str) -> SessionState: ...

        async def session_request_permission(
            self, params: acp.RequestPermissionRequest
        ) -> acp.RequestPermissionResponse: ...

        async def elicitation_create(
            self, params: acp.CreateElicitationRequest
        ) -> acp.CreateElicitationResponse: ...

        async def elicitation_complete(
            self, params: acp.CompleteElicitationNotification
        ) -> None: ...

    @property
    def _v2(self) -> bool:
        return self.agent.protocol_version == 2

    # -- driving the agent -----------------------------------------------------------------

    async def _new_session_v2(
        self, cwd: str, additional_directories: Sequence[str], mcp_servers: Sequence[Any]
    ) -> acp.NewSessionResponse:
        from acpstack.client import _v2_view as view
        from acpstack.schema import v2

        params = v2.NewSessionRequest(cwd=cwd, mcp_servers=mcp_servers_to_v2(mcp_servers))
        if additional_directories:
            params.additional_directories = list(additional_directories)
        result = await self.agent.call("session/new", params)
        options = view.config_options(result.config_options)
        state = self._state_of(result.session_id)
        state.config_options = options
        state.current_mode_id = view.current_mode(options) or state.current_mode_id
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
        from acpstack.client import _v2_view as view
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
            state = self._state_of(session_id)
            state.config_options = options
            state.current_mode_id = view.current_mode(options) or state.current_mode_id
        return options

    async def _prompt_v2(
        self, session_id: str, blocks: list[acp.ContentBlock], timeout: float | None
    ) -> acp.PromptResponse:
        from acpstack.schema import v2

        if session_id in self._turns:
            raise RequestError.invalid_params(
                {"sessionId": session_id}, "A prompt turn is already running in this session"
            )
        prompt = msgspec.convert(msgspec.to_builtins(blocks), list[v2.ContentBlock])
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
            raise _error(error)
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

    # -- cancelling one tool call or terminal ------------------------------------------------

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

    # -- what the agent calls ----------------------------------------------------------------

    async def v2_session_update(self, params: v2.UpdateSessionNotification) -> None:
        """v2 `session/update`: apply it to the session's model (v1-shaped updates to
        `on_update`), pass it as it came to `on_wire_update`, and end a waiting prompt at
        its idle state."""
        from acpstack.client import _v2_view as view
        from acpstack.schema import v2

        session_id = params.session_id
        state = self._state_of(session_id)
        model = view.updates(params.update, state)
        if self.on_wire_update is not None:
            self.on_wire_update(session_id, params.update)
        if self.on_update is not None:
            for update in model:
                self.on_update(session_id, update)
        if isinstance(params.update, v2.IdleStateUpdate | v2.RunningStateUpdate) or (
            isinstance(params.update, v2.RequiresActionStateUpdate)
        ):
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


def permission_request(params: v2.RequestPermissionRequest) -> acp.RequestPermissionRequest:
    """A v2 permission request as the model's: the question (`title`) is the tool call's
    title; a command subject is an `execute` tool call with the command as its input."""
    from acpstack.client import _v2_view as view
    from acpstack.schema import v2

    subject = params.subject
    call = acp.ToolCallUpdate(tool_call_id=f"permission-{next(_command_ids)}", title=params.title)
    if isinstance(subject, v2.ToolCallPermissionSubject):
        tool = subject.tool_call
        call.tool_call_id = tool.tool_call_id
        for name in ("raw_input", "raw_output"):
            if getattr(tool, name) is not UNSET:
                setattr(call, name, getattr(tool, name))
        if tool.kind is not UNSET:
            call.kind = values.tool_kind(tool.kind)
        if tool.status is not UNSET:
            call.status = values.tool_status(tool.status)
        if isinstance(tool.content, list):
            call.content = [view.tool_content(c) for c in tool.content]
        if isinstance(tool.locations, list):
            call.locations = [acp.ToolCallLocation(path=loc.path) for loc in tool.locations]
    elif isinstance(subject, v2.CommandPermissionSubject):
        if isinstance(subject.tool_call_id, str):
            call.tool_call_id = subject.tool_call_id
        call.kind = "execute"
        call.raw_input = {"command": subject.command, "cwd": subject.cwd}
    _check_unique_option_ids([o.option_id for o in params.options])  # before any is left out
    options = []
    for o in params.options:
        kind = values.permission_kind(o.kind)
        if kind is None:
            log.info("permission option %r left out: its kind %r is unknown", o.option_id, o.kind)
        else:
            options.append(acp.PermissionOption(option_id=o.option_id, name=o.name, kind=kind))
    return acp.RequestPermissionRequest(
        session_id=params.session_id, tool_call=call, options=options
    )


def _check_unique_option_ids(option_ids: Sequence[str]) -> None:
    """Two options with one optionId make any answer ambiguous (it could mean allow): refuse
    with -32602, as v1's `session_request_permission` does. Checked on the options as they
    came: leaving out those of an unknown kind must not hide a duplicate."""
    seen: set[str] = set()
    for option_id in option_ids:
        if option_id in seen:
            shown = option_id if len(option_id) <= 100 else option_id[:100] + "..."
            raise RequestError.invalid_params(
                {"path": "$.params.options", "optionId": shown},
                f"Duplicate permission optionId: {shown!r}",
            )
        seen.add(option_id)


def mcp_servers_to_v2(servers: Sequence[Any]) -> list[Any]:
    """MCP server configurations (v1's, as the runtime takes them) in v2's shape: every
    one has a `type`; SSE servers do not exist in v2 and are left out."""
    from acpstack.schema import v2

    out: list[Any] = []
    for server in servers:
        plain = msgspec.to_builtins(server) if isinstance(server, msgspec.Struct) else server
        if not isinstance(plain, dict) or plain.get("type", "stdio") not in ("stdio", "http"):
            continue
        out.append({"type": "stdio", **plain} if "type" not in plain else plain)
    return list(
        msgspec.convert({"cwd": "/", "mcpServers": out}, v2.NewSessionRequest).mcp_servers or []
    )


def _error(data: Any) -> RequestError:
    if isinstance(data, dict) and isinstance(data.get("code"), int):
        return RequestError(data["code"], str(data.get("message", "")), data.get("data"))
    return RequestError.internal_error({"reason": "the agent reported an error without details"})


__all__ = [
    "TurnWait",
    "V2ClientMethods",
    "WireUpdateCallback",
    "mcp_servers_to_v2",
    "permission_request",
]
