"""The official SDK's calling conventions on acpstack's runtime.

acpstack's wire decodes each message into its msgspec struct (typed, with its errors and
limits); here the struct becomes the pydantic model that code written for the official SDK
expects, the model's fields become keyword arguments of the user's method, and the model
the method returns goes back to a struct for acpstack to encode. Outbound calls do the
same the other way round.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec
from pydantic import BaseModel as _PydanticModel

from acp import _generated_schema as schema
from acp._legacy import find_handler, warn_old_handler
from acp.exceptions import RequestError
from acpstack.rpc import Connection, ConnectionClosed
from acpstack.schema import method_table
from acpstack.transports import StreamTransport, Transport
from acpstack.wire import DroppedMessage, IncomingNotification, IncomingRequest, ProtocolState
from acpstack.wire import RequestError as WireRequestError

log = logging.getLogger("acp")

# wire method -> (the method of the user's object, the pydantic model of its params)
AGENT_HANDLERS: dict[str, tuple[str, Any]] = {
    "initialize": ("initialize", schema.InitializeRequest),
    "authenticate": ("authenticate", schema.AuthenticateRequest),
    "session/new": ("new_session", schema.NewSessionRequest),
    "session/load": ("load_session", schema.LoadSessionRequest),
    "session/list": ("list_sessions", schema.ListSessionsRequest),
    "session/set_mode": ("set_session_mode", schema.SetSessionModeRequest),
    "session/set_config_option": ("set_config_option", schema.SetSessionConfigOptionRequest),
    "session/prompt": ("prompt", schema.PromptRequest),
    "session/fork": ("fork_session", schema.ForkSessionRequest),
    "session/resume": ("resume_session", schema.ResumeSessionRequest),
    "session/close": ("close_session", schema.CloseSessionRequest),
    "session/cancel": ("cancel", schema.CancelNotification),
    "logout": ("logout", schema.LogoutRequest),
}
CLIENT_HANDLERS: dict[str, tuple[str, Any]] = {
    "session/request_permission": ("request_permission", schema.RequestPermissionRequest),
    "session/update": ("session_update", schema.SessionNotification),
    "fs/write_text_file": ("write_text_file", schema.WriteTextFileRequest),
    "fs/read_text_file": ("read_text_file", schema.ReadTextFileRequest),
    "terminal/create": ("create_terminal", schema.CreateTerminalRequest),
    "terminal/output": ("terminal_output", schema.TerminalOutputRequest),
    "terminal/release": ("release_terminal", schema.ReleaseTerminalRequest),
    "terminal/wait_for_exit": ("wait_for_terminal_exit", schema.WaitForTerminalExitRequest),
    "terminal/kill": ("kill_terminal", schema.KillTerminalRequest),
    "elicitation/create": ("create_elicitation", schema.CreateElicitationRequest),
    "elicitation/complete": ("complete_elicitation", schema.CompleteElicitationNotification),
}


def to_kwargs(model: Any) -> dict[str, Any]:
    """The official SDK's convention: every field by name, `_meta`'s members as extras."""
    # A model's `__dict__` holds exactly its fields' values (members a catch-all variant
    # keeps are in `__pydantic_extra__`, not passed, as before).
    kwargs = dict(model.__dict__)
    meta = kwargs.pop("field_meta", None)
    if meta:
        kwargs.update(meta)
    return kwargs


_UPDATES: Any = None


def session_update_kwargs(params: Any) -> dict[str, Any]:
    """`session_update(session_id, update, **meta)` without validating the wrapper."""
    global _UPDATES
    if _UPDATES is None:
        from pydantic import TypeAdapter

        _UPDATES = TypeAdapter(schema.SessionUpdate)
    data = msgspec.to_builtins(params)
    kwargs = {"session_id": data["sessionId"], "update": _UPDATES.validate_python(data["update"])}
    meta = data.get("_meta")
    if isinstance(meta, dict):
        kwargs.update(meta)
    return kwargs


def elicitation_kwargs(params: Any) -> dict[str, Any]:
    """`create_elicitation(message, mode, **meta)`: the mode is the request less its message."""
    from pydantic import TypeAdapter

    from acp.client.router import _mode_from_create_elicitation_request
    from acp.schema import CreateElicitationRequest

    request = TypeAdapter(CreateElicitationRequest).validate_python(msgspec.to_builtins(params))
    mode = _mode_from_create_elicitation_request(request)
    return {"message": request.message, "mode": mode, **(request.field_meta or {})}


def to_wire(value: Any, struct_type: type | None) -> Any:
    """A pydantic model (or a dict, or None) as what acpstack encodes."""
    if isinstance(value, _PydanticModel):
        # pydantic's core directly: `model_dump` does the same after per-call checks that
        # cost as much again (a round trip converts four times)
        value = value.__pydantic_serializer__.to_python(
            value, mode="json", by_alias=True, exclude_none=True
        )
    elif value is None:
        value = {}
    if struct_type is None or not isinstance(value, dict):
        return value
    return msgspec.convert(value, struct_type)


def from_wire(value: Any, model: Any) -> Any:
    data = msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value
    if model is None:
        return data
    if isinstance(model, type) and issubclass(model, _PydanticModel):
        return model.__pydantic_validator__.validate_python(data)  # = model_validate, leaner
    from pydantic import TypeAdapter

    return TypeAdapter(model).validate_python(data)


class _whole:  # noqa: N801 (a marker: call with the request model whole)
    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func


class Dispatcher:
    """acpstack's dispatcher interface over an object with the official SDK's method names."""

    def __init__(self, target: Any, handlers: dict[str, tuple[str, Any]]) -> None:
        self.target = target
        self.handlers = handlers
        # Notification handlers run one after another, in order, on a worker of their
        # own: a handler may await a request to the peer (the official SDK allows it),
        # whose answer must not wait behind the handler itself.
        self._queue: deque[tuple[Callable[..., Any], Any]] = deque()
        self._worker: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    def _find(self, method: str) -> tuple[Callable[..., Any], Any]:
        entry = self.handlers.get(method)
        func, name, old = find_handler(self.target, entry[0]) if entry else (None, "", False)
        if entry is None or func is None:
            raise RequestError.method_not_found(method)
        if old:  # the pre-0.7 style: the request model whole
            warn_old_handler(self.target, name)
            return _whole(func), entry[1]
        return func, entry[1]

    def _ext(self, name: str) -> Callable[..., Any] | None:
        func, found, old = find_handler(self.target, name)
        if old:
            warn_old_handler(self.target, found)
        return func

    async def handle_request(self, event: IncomingRequest) -> Any:
        if event.spec is None:  # an extension method: `_name`
            ext = self._ext("ext_method")
            if ext is None:
                raise RequestError.method_not_found(event.method)
            return await ext(event.method[1:], event.params or {})
        func, model = self._find(event.method)
        try:
            if event.method == "elicitation/create":
                kwargs = elicitation_kwargs(event.params)
            else:
                kwargs = to_kwargs(from_wire(event.params, model))
        except ValueError as err:  # pydantic's ValidationError
            raise RequestError.invalid_params({"detail": str(err)}) from None
        if isinstance(func, _whole):
            result = await func.func(from_wire(event.params, model))
        else:
            result = await func(**kwargs)
        return to_wire(result, event.spec.result)

    async def handle_notification(self, event: IncomingNotification) -> None:
        if event.spec is None:
            ext = self._ext("ext_notification")
            if ext is not None:
                self._queue.append((ext, (event.method[1:], event.params or {})))
        else:
            try:
                func, model = self._find(event.method)
            except RequestError:
                return
            self._queue.append((func, (model, event.params)))
        if self._worker is None:
            self._idle.clear()
            self._worker = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._queue:
                func, (first, second) = self._queue.popleft()
                try:
                    if isinstance(first, str):  # an extension: (name, params)
                        await func(first, second)
                    elif isinstance(func, _whole):
                        await func.func(from_wire(second, first))
                    elif first is schema.SessionNotification:  # the hot path: the update only
                        await func(**session_update_kwargs(second))
                    else:
                        await func(**to_kwargs(from_wire(second, first)))
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("notification handler %s failed", getattr(func, "__name__", func))
        finally:
            self._worker = None
            self._idle.set()

    def busy(self) -> bool:
        """Whether notifications are being handled (`settled` would wait)."""
        return self._worker is not None

    async def settled(self) -> None:
        """Wait until every notification received so far has been handled (at once when
        called from a notification handler: it cannot wait for itself)."""
        if self._worker is not None and asyncio.current_task() is not self._worker:
            await self._idle.wait()

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()

    def message_dropped(self, event: DroppedMessage) -> None:
        log.warning("dropped %s: %s", event.method, event.detail)


class plain_dispatcher:  # noqa: N801 (used like a function)
    """A dispatcher over one function `handler(method, params, is_notification)`."""

    def __init__(self, handler: Callable[[str, Any, bool], Any]) -> None:
        self.handler = handler

    async def _call(self, method: str, params: Any, notification: bool) -> Any:
        result = self.handler(method, from_wire(params, None), notification)
        return await result if asyncio.iscoroutine(result) else result

    async def handle_request(self, event: IncomingRequest) -> Any:
        result = await self._call(event.method, event.params, False)
        return to_wire(result, event.spec.result if event.spec else None)

    async def handle_notification(self, event: IncomingNotification) -> None:
        await self._call(event.method, event.params, True)

    def message_dropped(self, event: DroppedMessage) -> None:
        log.warning("dropped %s: %s", event.method, event.detail)


class Link:
    """One acpstack connection, with the calls the official connection classes make."""

    def __init__(
        self,
        role: str,
        target: Any,
        transport: Transport,
        *,
        unstable: bool = True,
        handlers: dict[str, tuple[str, Any]] | None = None,
        dispatcher: Any = None,
    ) -> None:
        self.state = ProtocolState(role, unstable=True)  # type: ignore[arg-type]
        # The official SDK serves and sends requests before `initialize`; code written for
        # it (its tests, quick scripts) relies on that, so the layer does too. A real
        # `initialize` still negotiates as usual.
        self.state.initialized = True
        self.state.version = 1
        self.state.gated = False  # nor does it gate what a side sends on capabilities
        self.unstable = unstable
        self.dispatcher = dispatcher or Dispatcher(target, handlers or {})
        self.conn = Connection(transport, self.state, self.dispatcher)
        self._specs = {spec.name: spec for spec in method_table(True)}
        self.conn.start()

    def params_type(self, method: str) -> Any:
        """The struct of `method`'s params (None for a method the table does not know)."""
        spec = self._specs.get(method)
        return spec.params if spec else None

    async def request(self, method: str, params: Any, result_model: Any) -> Any:
        # (raw_request's body, inline: one coroutine less per call)
        spec = self._specs.get(method)
        wire_params = to_wire(params, spec.params if spec else None)
        try:
            result = await self.conn._request(method, wire_params, check_gate=False)
        except WireRequestError as err:
            raise RequestError.from_wire(err) from None
        except ConnectionClosed as closed:
            raise ConnectionError(f"Connection closed: {closed}") from None
        return from_wire(result, result_model)

    async def raw_request(self, method: str, params: Any) -> Any:
        spec = self._specs.get(method)
        wire_params = to_wire(params, spec.params if spec else None)
        try:
            return await self.conn._request(method, wire_params, check_gate=False)
        except WireRequestError as err:
            raise RequestError.from_wire(err) from None
        except ConnectionClosed as closed:
            raise ConnectionError(f"Connection closed: {closed}") from None

    async def raw_notify(self, method: str, params: Any) -> None:
        # A notification is written as pydantic serializes it (checked by the model when
        # it was built): no round trip through a dict and a struct.
        if isinstance(params, _PydanticModel):
            wire: Any = msgspec.Raw(
                params.model_dump_json(by_alias=True, exclude_none=True).encode()
            )
        else:
            spec = self._specs.get(method)
            wire = to_wire(params, spec.params if spec else None)
        try:
            await self.conn.notify(method, wire)
        except ConnectionClosed as closed:
            raise ConnectionError(f"Connection closed: {closed}") from None

    async def notify(self, method: str, params: Any) -> None:
        await self.raw_notify(method, params)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await self.raw_request(f"_{method}", params)
        return result if isinstance(result, dict) else {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        await self.raw_notify(f"_{method}", params)

    async def wait_closed(self) -> None:
        await self.conn.wait_closed()

    async def close(self) -> None:
        await self.conn.aclose()
        if isinstance(self.dispatcher, Dispatcher):
            self.dispatcher.stop()


def stream_transport(input_stream: Any, output_stream: Any) -> Transport:
    """The official API hands over (writer to the peer, reader from the peer)."""
    if not isinstance(input_stream, asyncio.StreamWriter) or not isinstance(
        output_stream, asyncio.StreamReader
    ):
        raise TypeError(
            "expected (asyncio.StreamWriter, asyncio.StreamReader): the stream that goes to "
            "the peer, then the one that comes from it"
        )
    return StreamTransport(output_stream, input_stream)


__all__ = ["AGENT_HANDLERS", "CLIENT_HANDLERS", "ConnectionClosed", "Dispatcher", "Link"]
