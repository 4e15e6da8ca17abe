"""What a `Connection` hands the peer's messages to (`Dispatcher`), and the errors its
calls raise. Apart from the runtime: when `rpc/` is compiled with mypyc, these stay
interpreted (mypyc cannot build classes on ConnectionError or TimeoutError, and a Protocol
is for type checkers)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from acpstack.wire import DroppedMessage, IncomingNotification, IncomingRequest


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


__all__ = ["ConnectionClosed", "Dispatcher", "RequestTimeout"]
