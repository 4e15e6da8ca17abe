"""`AcpServer`: the official SDK's framework-agnostic server core, on acpstack's
`AgentServer`.

Each method is one exchange with acpstack's ASGI application, made in this process:
`handle_post` is a POST, `open_stream` a GET whose server-sent events are yielded as they
come, `handle_delete` a DELETE. So the status codes, routing of messages to the
connection's and sessions' streams, size limits, backpressure, idle reaping and shutdown
are acpstack's (docs/remote.md). Each connection gets its own agent from
`agent_factory(conn)`, as upstream: `conn` is the `AgentSideConnection` serving it.

The module constants are read when an `AcpServer` is made (pass `limits=` for the rest of
acpstack's `ServerLimits`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from acp._sse import serialize_sse_keepalive
from acp.core import AgentSideConnection
from acp.http.protocol import CONNECTION_ID_HEADER, SESSION_ID_HEADER
from acpstack.server import AgentServer, ServerLimits, ServerSecurity
from acpstack.server._agents import AgentLink
from acpstack.server._connection import RemoteConnection
from acpstack.server._pipe import pipe_pair
from acpstack.transports._sse import SSE_KEEPALIVE

__all__ = [
    "AcpServer",
    "AgentFactory",
    "ConnectionRegistry",
    "OutboundStream",
    "PostResult",
]

AgentFactory = Callable[[AgentSideConnection], Any]

SSE_KEEPALIVE_INTERVAL_SECONDS = 15.0
"""How long a stream may be idle before a keepalive comment is sent."""
INITIALIZE_TIMEOUT_SECONDS = 30.0
"""How long the agent has to answer `initialize` (the server answers 504 after that)."""

_HOST = (b"host", b"127.0.0.1")  # in-process exchanges come from this machine


class Headers(dict[str, str]):
    """Response headers, looked up without regard to case (stored in lower case)."""

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


@dataclass
class PostResult:
    """The answer to one exchange: HTTP status, JSON body (None when empty), headers."""

    status: int
    body: Any = None
    headers: Headers = field(default_factory=Headers)


class OutboundStream:
    """A bounded, ordered queue of messages for one reader: `push` waits while it is full
    (nothing is dropped), `iterate` yields until `close`."""

    def __init__(self, *, capacity: int = 1024) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=capacity)
        self._closed = False
        self._end = object()

    async def push(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("stream closed")
        await self._queue.put(message)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue._queue.append(self._end)  # type: ignore[attr-defined]  # past capacity
            self._queue._wakeup_next(self._queue._getters)  # type: ignore[attr-defined]

    async def iterate(self) -> AsyncIterator[dict[str, Any]]:
        while (message := await self._queue.get()) is not self._end:
            yield message


class _Server(AgentServer):
    """acpstack's server, starting an official-API agent for each connection."""

    def __init__(self, factory: AgentFactory, **options: Any) -> None:
        super().__init__(factory, health_path=None, ready_path=None, metrics_path=None, **options)
        self._factory = factory

    async def start_agent(self, connection: RemoteConnection) -> None:
        ours, theirs = pipe_pair()
        side = AgentSideConnection(self._factory, theirs, use_unstable_protocol=self.unstable)
        connection.attach_agent(AgentLink(ours, side._link.conn, "acp agent"))


class ConnectionRegistry:
    """The server's open connections, by `Acp-Connection-Id`."""

    def __init__(self, app: AgentServer) -> None:
        self._app = app

    @property
    def _connections(self) -> dict[str, RemoteConnection]:
        return self._app.connections

    def get(self, connection_id: str) -> RemoteConnection | None:
        connection = self._app.connections.get(connection_id)
        return None if connection is None or connection.closed else connection

    async def remove(self, connection_id: str) -> None:
        if (connection := self._app.connections.get(connection_id)) is not None:
            await connection.aclose()

    async def close_all(self) -> None:
        for connection in list(self._app.connections.values()):
            await connection.aclose()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._app.connections))


def _headers(**named: str | None) -> list[tuple[bytes, bytes]]:
    return [_HOST] + [(k.encode(), v.encode()) for k, v in named.items() if v is not None]


class AcpServer:
    """The streamable HTTP + WebSocket server core: mount `create_asgi_app` (or this
    server's `app`) in any ASGI server.

    Args:
        agent_factory: Called once per connection with its `AgentSideConnection`; returns
            the connection's agent.
        security: acpstack's `ServerSecurity` (default: no token, loopback Host and Origin
            only; list the names clients use in `allowed_hosts`).
        limits: acpstack's `ServerLimits` (default: acpstack's, with this module's
            keepalive interval and initialize timeout).
        use_unstable_protocol: Offer the unstable methods.
    """

    def __init__(
        self,
        agent_factory: AgentFactory,
        *,
        security: ServerSecurity | None = None,
        limits: ServerLimits | None = None,
        use_unstable_protocol: bool = False,
    ) -> None:
        limits = limits or ServerLimits(
            keepalive_interval=SSE_KEEPALIVE_INTERVAL_SECONDS,
            initialize_timeout=INITIALIZE_TIMEOUT_SECONDS,
        )
        self.app: AgentServer = _Server(
            agent_factory, security=security, limits=limits, unstable=use_unstable_protocol
        )
        self._registry = ConnectionRegistry(self.app)

    @property
    def registry(self) -> ConnectionRegistry:
        return self._registry

    async def _exchange(
        self, method: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
    ) -> PostResult:
        scope = {
            "type": "http",
            "method": method,
            "path": self.app.path,
            "headers": headers,
            "query_string": b"",
            "client": ("127.0.0.1", 0),
        }
        answer = PostResult(0)
        content = bytearray()
        request = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if request:
                return request.pop()
            await asyncio.Event().wait()  # the caller never goes away mid-exchange
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer.status = message["status"]
                answer.headers = Headers(
                    (k.decode().lower(), v.decode()) for k, v in message.get("headers", [])
                )
            elif message["type"] == "http.response.body":
                content.extend(message.get("body", b""))

        await self.app(scope, receive, send)
        if content:
            try:
                answer.body = json.loads(content)
            except ValueError:
                answer.body = {"error": content.decode("utf-8", "replace")}
        return answer

    async def handle_post(
        self,
        message: Any,
        *,
        content_type: str | None,
        connection_id: str | None,
        session_id: str | None,
    ) -> PostResult:
        """POST one JSON-RPC message (or a batch: 501). `initialize` without a connection
        starts one: 200 with the agent's answer and `Acp-Connection-Id`; anything else
        is 202 and its answer comes on a stream."""
        headers = _headers(
            **{
                "content-type": content_type,
                CONNECTION_ID_HEADER.lower(): connection_id,
                SESSION_ID_HEADER.lower(): session_id,
            }
        )
        return await self._exchange("POST", headers, json.dumps(message).encode())

    def validate_stream(
        self, *, connection_id: str | None, session_id: str | None
    ) -> PostResult | None:
        """Why a stream could not be opened (400: no connection id, 404: an unknown
        connection or session), or None."""
        if connection_id is None:
            return PostResult(400, {"error": f"missing {CONNECTION_ID_HEADER}"})
        connection = self._registry.get(connection_id)
        if connection is None:
            return PostResult(404, {"error": f"unknown {CONNECTION_ID_HEADER}"})
        if session_id is not None and session_id not in connection.session_ids:
            return PostResult(404, {"error": f"unknown {SESSION_ID_HEADER}"})
        return None

    async def open_stream(
        self, *, connection_id: str, session_id: str | None
    ) -> AsyncIterator[bytes]:
        """The connection's (or a session's) server-sent events, frame by frame, until the
        connection ends; a keepalive comment when it is idle."""
        chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        gone = asyncio.Event()
        request = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if request:
                return request.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] != 200:
                chunks.put_nowait(None)
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                chunks.put_nowait(serialize_sse_keepalive() if body == SSE_KEEPALIVE else body)
                if not message.get("more_body", False):
                    chunks.put_nowait(None)

        headers = _headers(
            **{
                "accept": "text/event-stream",
                CONNECTION_ID_HEADER.lower(): connection_id,
                SESSION_ID_HEADER.lower(): session_id,
            }
        )
        scope = {"type": "http", "method": "GET", "path": self.app.path, "headers": headers}
        exchange = asyncio.ensure_future(self.app(scope, receive, send))
        exchange.add_done_callback(lambda _: chunks.put_nowait(None))
        try:
            while (chunk := await chunks.get()) is not None:
                if chunk:
                    yield chunk
        finally:
            gone.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(exchange, 5)

    async def handle_delete(self, *, connection_id: str | None) -> PostResult:
        """End the connection and its agent: 202 (400 without an id, 404 for an unknown one)."""
        return await self._exchange(
            "DELETE", _headers(**{CONNECTION_ID_HEADER.lower(): connection_id})
        )

    async def close(self) -> None:
        """Close every connection (and its agent)."""
        await self.app.aclose()
