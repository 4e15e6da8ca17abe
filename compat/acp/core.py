"""The official SDK's connection classes and entry points, on acpstack's runtime."""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from pydantic import TypeAdapter

from acp import _generated_schema as s
from acp._bridge import AGENT_HANDLERS, CLIENT_HANDLERS, Link, stream_transport, to_kwargs
from acp._legacy import accept_request_models
from acp._outbound import params_struct
from acp._transport import MessagePipe
from acp.exceptions import RequestError
from acpstack.transports import Transport

__all__ = ["AgentSideConnection", "ClientSideConnection", "connect_to_agent", "run_agent"]


# The classes a `session/update` may carry (the arms of the SessionUpdate union).
_UPDATE_TYPES = tuple(
    arm for arm in typing.get_args(typing.get_args(s.SessionUpdate)[0]) if isinstance(arm, type)
)


def _model(model: Any, fields: dict[str, Any], extras: dict[str, Any]) -> Any:
    """`model(**fields, field_meta=extras)` less the None fields (what `__init__` does,
    straight to the model's validator: no frame and keyword packing of its own)."""
    data = {k: v for k, v in fields.items() if v is not None}
    data["field_meta"] = extras or None
    return model.__pydantic_validator__.validate_python(data)


def _transport(input_stream: Any, output_stream: Any) -> Transport:
    if output_stream is None and hasattr(input_stream, "start_reading"):
        return input_stream  # type: ignore[no-any-return]  # acpstack's own
    if output_stream is None and hasattr(input_stream, "receive"):
        return MessagePipe(input_stream)  # a message transport (the official SDK's protocol)
    return stream_transport(input_stream, output_stream)


class _RawCalls:
    """What upstream's connection classes keep as `_conn`: plain JSON-RPC calls with dicts
    in and out. Applications reach for it (fast-agent's terminal runtime sends
    `terminal/*` requests through it), so the layer has it, on acpstack's connection."""

    def __init__(self, link: Link) -> None:
        self._link = link

    async def send_request(self, method: str, params: Any = None) -> Any:
        return msgspec.to_builtins(await self._link.raw_request(method, params))

    async def send_notification(self, method: str, params: Any = None) -> None:
        await self._link.raw_notify(method, params)


class _Side:
    _link: Link

    def _call(
        self, method: str, model: Any, result: Any, fields: dict[str, Any], extras: dict[str, Any]
    ) -> Awaitable[Any]:
        # (not a coroutine of its own: the caller awaits the request directly)
        link = self._link
        params = params_struct(model, link.params_type(method), fields, extras)
        if params is None:  # the plain way: the model (raising its ValidationError)
            params = _model(model, fields, extras)
        return link.request(method, params, result)

    @property
    def _conn(self) -> _RawCalls:
        return _RawCalls(self._link)

    async def listen(self) -> None:
        """Serve until the peer goes away."""
        await self._link.wait_closed()

    async def close(self) -> None:
        await self._link.close()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._link.ext_method(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        await self._link.ext_notification(method, params)

    def on_connect(self, conn: Any) -> None:
        pass


class AgentSideConnection(_Side):
    """The agent's end: serves `agent`, and calls the client with the `Client` methods."""

    def __init__(
        self,
        to_agent: Callable[[Any], Any] | Any,
        input_stream: Any,
        output_stream: Any = None,
        listening: bool = True,
        *,
        use_unstable_protocol: bool = False,
        **connection_kwargs: Any,
    ) -> None:
        agent = to_agent(self) if callable(to_agent) else to_agent
        self._link = Link(
            "agent",
            agent,
            _transport(input_stream, output_stream),
            unstable=use_unstable_protocol,
            handlers=AGENT_HANDLERS,
        )
        if on_connect := getattr(agent, "on_connect", None):
            on_connect(self)

    async def __aenter__(self) -> AgentSideConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if not kwargs and isinstance(session_id, str) and isinstance(update, _UPDATE_TYPES):
            # The common case, on the hot path: the update is already a checked model, so
            # its JSON goes into the notification as it is (no wrapper model to validate).
            body = update.model_dump_json(by_alias=True, exclude_none=True).encode()
            frame = b'{"sessionId":' + msgspec.json.encode(session_id) + b',"update":' + body + b"}"
            await self._link.raw_notify("session/update", msgspec.Raw(frame))
            return
        await self._link.notify(
            "session/update",
            _model(s.SessionNotification, dict(session_id=session_id, update=update), kwargs),
        )

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> s.RequestPermissionResponse:
        return await self._call(  # type: ignore[no-any-return]
            "session/request_permission",
            s.RequestPermissionRequest,
            s.RequestPermissionResponse,
            dict(session_id=session_id, tool_call=tool_call, options=options),
            kwargs,
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> s.ReadTextFileResponse:
        return await self._call(  # type: ignore[no-any-return]
            "fs/read_text_file",
            s.ReadTextFileRequest,
            s.ReadTextFileResponse,
            dict(path=path, session_id=session_id, limit=limit, line=line),
            kwargs,
        )

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> s.WriteTextFileResponse | None:
        return await self._call(  # type: ignore[no-any-return]
            "fs/write_text_file",
            s.WriteTextFileRequest,
            s.WriteTextFileResponse,
            dict(content=content, path=path, session_id=session_id),
            kwargs,
        )

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> s.CreateTerminalResponse:
        return await self._call(  # type: ignore[no-any-return]
            "terminal/create",
            s.CreateTerminalRequest,
            s.CreateTerminalResponse,
            dict(
                command=command,
                session_id=session_id,
                args=args,
                cwd=cwd,
                env=env,
                output_byte_limit=output_byte_limit,
            ),
            kwargs,
        )

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> s.TerminalOutputResponse:
        return await self._call(  # type: ignore[no-any-return]
            "terminal/output",
            s.TerminalOutputRequest,
            s.TerminalOutputResponse,
            dict(session_id=session_id, terminal_id=terminal_id),
            kwargs,
        )

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> s.ReleaseTerminalResponse | None:
        return await self._call(  # type: ignore[no-any-return]
            "terminal/release",
            s.ReleaseTerminalRequest,
            s.ReleaseTerminalResponse,
            dict(session_id=session_id, terminal_id=terminal_id),
            kwargs,
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> s.WaitForTerminalExitResponse:
        return await self._call(  # type: ignore[no-any-return]
            "terminal/wait_for_exit",
            s.WaitForTerminalExitRequest,
            s.WaitForTerminalExitResponse,
            dict(session_id=session_id, terminal_id=terminal_id),
            kwargs,
        )

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> s.KillTerminalResponse | None:
        return await self._call(  # type: ignore[no-any-return]
            "terminal/kill",
            s.KillTerminalRequest,
            s.KillTerminalResponse,
            dict(session_id=session_id, terminal_id=terminal_id),
            kwargs,
        )

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        """Ask the user for input: `mode` says how (a form or a URL) and for what scope."""
        params = mode.model_dump(mode="json", by_alias=True, exclude_none=True)
        params["message"] = message
        if kwargs:
            params["_meta"] = kwargs
        request = TypeAdapter(s.CreateElicitationRequest).validate_python(params)
        return await self._link.request("elicitation/create", request, s.CreateElicitationResponse)

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        params = _model(
            s.CompleteElicitationNotification, dict(elicitation_id=elicitation_id), kwargs
        )
        await self._link.notify("elicitation/complete", params)


class ClientSideConnection(_Side):
    """The client's end: serves `client`, and calls the agent with the `Agent` methods."""

    def __init__(
        self,
        to_client: Callable[[Any], Any] | Any,
        input_stream: Any,
        output_stream: Any = None,
        *,
        use_unstable_protocol: bool = False,
        **connection_kwargs: Any,
    ) -> None:
        client = to_client(self) if callable(to_client) else to_client
        self._link = Link(
            "client",
            client,
            _transport(input_stream, output_stream),
            unstable=use_unstable_protocol,
            handlers=CLIENT_HANDLERS,
        )
        if on_connect := getattr(client, "on_connect", None):
            on_connect(self)

    async def __aenter__(self) -> ClientSideConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> s.InitializeResponse:
        fields = dict(
            protocol_version=protocol_version,
            client_capabilities=client_capabilities or s.ClientCapabilities(),
            client_info=client_info,
        )
        return await self._call(
            "initialize", s.InitializeRequest, s.InitializeResponse, fields, kwargs
        )  # type: ignore[no-any-return]

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.NewSessionResponse:
        fields = dict(
            cwd=cwd, additional_directories=additional_directories, mcp_servers=mcp_servers or []
        )
        return await self._call(
            "session/new", s.NewSessionRequest, s.NewSessionResponse, fields, kwargs
        )  # type: ignore[no-any-return]

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> s.LoadSessionResponse:
        fields = dict(
            cwd=cwd,
            session_id=session_id,
            mcp_servers=mcp_servers or [],
            additional_directories=additional_directories,
        )
        return await self._call(
            "session/load", s.LoadSessionRequest, s.LoadSessionResponse, fields, kwargs
        )  # type: ignore[no-any-return]

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> s.ListSessionsResponse:
        fields = dict(cwd=cwd, cursor=cursor)
        return await self._call(
            "session/list", s.ListSessionsRequest, s.ListSessionsResponse, fields, kwargs
        )  # type: ignore[no-any-return]

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> s.SetSessionModeResponse:
        fields = dict(session_id=session_id, mode_id=mode_id)
        return await self._call(  # type: ignore[no-any-return]
            "session/set_mode", s.SetSessionModeRequest, s.SetSessionModeResponse, fields, kwargs
        )

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> s.SetSessionConfigOptionResponse:
        fields: dict[str, Any] = dict(config_id=config_id, session_id=session_id, value=value)
        model: Any = s.SetSessionConfigOptionSelectRequest
        if isinstance(value, bool):
            fields["type"] = "boolean"
            model = s.SetSessionConfigOptionBooleanRequest
        return await self._call(  # type: ignore[no-any-return]
            "session/set_config_option",
            model,
            s.SetSessionConfigOptionResponse,
            fields,
            kwargs,
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> s.AuthenticateResponse:
        fields = dict(method_id=method_id)
        return await self._call(  # type: ignore[no-any-return]
            "authenticate", s.AuthenticateRequest, s.AuthenticateResponse, fields, kwargs
        )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> s.PromptResponse:
        fields = dict(session_id=session_id, prompt=prompt)
        dispatcher = self._link.dispatcher
        try:
            response = await self._call(
                "session/prompt", s.PromptRequest, s.PromptResponse, fields, kwargs
            )
        except RequestError:
            await dispatcher.settled()
            raise
        # The turn's updates came before its answer: the client sees them all first.
        if dispatcher.busy():
            await dispatcher.settled()
        return response  # type: ignore[no-any-return]

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.ForkSessionResponse:
        fields = dict(
            session_id=session_id,
            cwd=cwd,
            additional_directories=additional_directories,
            mcp_servers=mcp_servers,
        )
        return await self._call(
            "session/fork", s.ForkSessionRequest, s.ForkSessionResponse, fields, kwargs
        )  # type: ignore[no-any-return]

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.ResumeSessionResponse:
        fields = dict(
            session_id=session_id,
            cwd=cwd,
            additional_directories=additional_directories,
            mcp_servers=mcp_servers,
        )
        return await self._call(  # type: ignore[no-any-return]
            "session/resume", s.ResumeSessionRequest, s.ResumeSessionResponse, fields, kwargs
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> s.CloseSessionResponse | None:
        fields = dict(session_id=session_id)
        return await self._call(  # type: ignore[no-any-return]
            "session/close", s.CloseSessionRequest, s.CloseSessionResponse, fields, kwargs
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        await self._link.notify(
            "session/cancel", _model(s.CancelNotification, dict(session_id=session_id), kwargs)
        )


async def run_agent(
    agent: Any,
    input_stream: Any = None,
    output_stream: Any = None,
    *,
    use_unstable_protocol: bool = False,
    stdio_buffer_limit_bytes: int | None = None,
    **connection_kwargs: Any,
) -> None:
    """Serve `agent` over this process's stdio (or the given streams) until the client leaves.

    On stdio, acpstack's own transport carries the frames: no line limit, stdout protected
    from stray prints, EOF ends the connection."""
    if input_stream is None and output_stream is None:
        from acpstack.transports import open_stdio_transport

        transport: Any = await open_stdio_transport()
        conn = AgentSideConnection(agent, transport, use_unstable_protocol=use_unstable_protocol)
    else:
        conn = AgentSideConnection(
            agent, input_stream, output_stream, use_unstable_protocol=use_unstable_protocol
        )
    try:
        await conn.listen()
    finally:
        await asyncio.shield(conn.close())


def connect_to_agent(
    client: Any,
    input_stream: Any,
    output_stream: Any = None,
    *,
    use_unstable_protocol: bool = False,
    **connection_kwargs: Any,
) -> ClientSideConnection:
    """A client connection to an agent over (writer to it, reader from it)."""
    return ClientSideConnection(
        client, input_stream, output_stream, use_unstable_protocol=use_unstable_protocol
    )


# The pre-0.7 call style: `conn.newSession(NewSessionRequest(...))` (with a warning).
accept_request_models(ClientSideConnection, dict(AGENT_HANDLERS.values()), to_kwargs)
accept_request_models(AgentSideConnection, dict(CLIENT_HANDLERS.values()), to_kwargs)

_ = RequestError
