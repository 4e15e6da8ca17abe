"""What a `Connection` hands the peer's messages to (`Dispatcher`), and the errors its
calls raise. Apart from the runtime: when `rpc/` is compiled with mypyc, these stay
interpreted (mypyc cannot build classes on ConnectionError or TimeoutError, and a Protocol
is for type checkers)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from acpstack.wire import DroppedMessage, IncomingNotification, IncomingRequest, RequestError


class Handlers(Protocol):
    """What `HandlerDispatcher` routes to: an `Agent` or a `Client` (a method per handled
    ACP method, named in the method table, plus the extension and dropped-message hooks)."""

    def ext_method(self, method: str, params: Any) -> Awaitable[Any]:
        """Answer a `_`-prefixed extension request."""
        ...

    def ext_notification(self, method: str, params: Any) -> Awaitable[None]:
        """Handle a `_`-prefixed extension notification."""
        ...

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        """Learn of a discarded incoming message."""
        ...


class HandlerDispatcher:
    """Routes inbound messages to an `Agent`'s or a `Client`'s handlers by the method
    table's names; a request with no handler is answered -32601, a notification with none
    is ignored, `_`-prefixed methods go to `ext_method` / `ext_notification`."""

    def __init__(self, handlers: Handlers) -> None:
        self.handlers = handlers

    # Each returns the handler's own coroutine, which the runtime awaits: no coroutine
    # of the dispatcher's in between.
    def handle_request(self, event: IncomingRequest) -> Awaitable[Any]:
        """The handler's coroutine for a request (-32601 when there is none)."""
        spec = event.spec
        if spec is None:
            return self.handlers.ext_method(event.method, event.params)
        handler = getattr(self.handlers, spec.handler, None)
        if handler is None:
            raise RequestError.method_not_found(event.method)
        result: Awaitable[Any] = handler(event.params)
        return result

    def handle_notification(self, event: IncomingNotification) -> Awaitable[None]:
        """The handler's coroutine for a notification (nothing when there is none)."""
        spec = event.spec
        if spec is None:
            return self.handlers.ext_notification(event.method, event.params)
        handler = getattr(self.handlers, spec.handler, None)
        if handler is None:
            return _nothing()
        result: Awaitable[None] = handler(event.params)
        return result

    def message_dropped(self, event: DroppedMessage) -> None:
        """Tell the handlers of a discarded incoming message."""
        self.handlers.on_message_dropped(event)


async def _nothing() -> None:
    """What a notification without a handler awaits."""


class ConnectionClosed(ConnectionError):
    """The connection ended; raised by every call that was pending or is made afterwards."""

    def __init__(self, reason: str = "connection closed") -> None:
        super().__init__(reason)
        self.reason: str = reason
        """Why it ended, in words ("connection closed locally", "... by peer", or what the
        transport saw, e.g. the agent process's exit)."""


class RequestTimeout(TimeoutError):
    """A call got no answer within its timeout (a `$/cancel_request` was sent)."""


class Dispatcher(Protocol):
    """What a `Connection` hands the peer's messages to, on the event loop (the agent and
    client runtimes implement it)."""

    def handle_request(self, event: IncomingRequest) -> Awaitable[Any]:
        """Answer one request (an `async def`, or a function returning an awaitable, such
        as the handler's own coroutine), awaited in a task of its own: the result (the
        method's response Struct, or a JSON value for a `_` method), or `RequestError`.
        Any other exception reaches the peer as -32603 without details. The task is
        cancelled when the peer cancels the request, and by `Connection.aclose`."""
        ...

    def handle_notification(self, event: IncomingNotification) -> Awaitable[None]:
        """Handle one notification (an `async def`, or a function returning an
        awaitable); the session's next one waits until it is done. Exceptions are
        logged, never sent."""
        ...

    def message_dropped(self, event: DroppedMessage) -> None:
        """Learn of a discarded incoming message. Must not block; exceptions are logged."""


__all__ = ["ConnectionClosed", "Dispatcher", "HandlerDispatcher", "Handlers", "RequestTimeout"]
