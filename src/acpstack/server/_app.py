"""`AgentServer`: remote ACP as an ASGI 3 application (mount it anywhere, or run it with
`serve_remote`). One endpoint (`/acp` by default) serves both profiles: streamable HTTP
(POST, GET with server-sent events, DELETE) and WebSocket. Every connection gets its own
agent: a new instance of a Python `Agent` (in this process), or a new process of a stdio
agent command; the agent ends with the connection.

`GET /healthz` (`health_path`) answers 200 "ok" while the server takes connections and
503 once it is shutting down, for load balancers: no token needed, nothing about sessions.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Mapping

from acpstack.server._agents import AgentSource
from acpstack.server._asgi import (
    Headers,
    Receive,
    Scope,
    Send,
    header_map,
    jsonrpc_error,
    respond,
    respond_json,
)
from acpstack.server._connection import InitializeFailed, RemoteConnection
from acpstack.server._http import handle_delete, handle_get, handle_post
from acpstack.server._limits import ServerLimits
from acpstack.server._security import ALLOWED_HEADERS, EXPOSED_HEADERS, ServerSecurity
from acpstack.server._websocket import serve_websocket
from acpstack.transports import CONNECTION_HEADER, Envelope
from acpstack.wire import INTERNAL_ERROR

log = logging.getLogger("acpstack.server")


class AgentServer:
    """An ASGI application that serves `agent` (a factory of `Agent`s, e.g. the class, or
    a stdio agent command) to remote ACP clients."""

    def __init__(
        self,
        agent: AgentSource,
        *,
        path: str = "/acp",
        security: ServerSecurity | None = None,
        limits: ServerLimits | None = None,
        unstable: bool = False,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        health_path: str | None = "/healthz",
    ) -> None:
        self.agent = agent
        self.path: str = "/" + path.strip("/")
        self.health_path = health_path
        self.security: ServerSecurity = security or ServerSecurity()
        self.limits: ServerLimits = limits or ServerLimits()
        self.unstable = unstable
        self.cwd = cwd
        self.env = env
        self.connections: dict[str, RemoteConnection] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False

    # -- ASGI -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind not in ("http", "websocket"):
            return
        if (
            kind == "http"
            and self.health_path is not None
            and scope.get("path") == self.health_path
        ):
            await self._health(scope, send)
            return
        headers = header_map(scope)
        if not self._on_path(scope):
            if kind == "http":
                await respond(send, 404, "not found")
            else:
                await receive()
                await send({"type": "websocket.close", "code": 1008})
            return
        rejection = self.security.check_host(headers.get("host")) or self.security.check_origin(
            headers.get("origin")
        )
        if kind == "http" and scope["method"] == "OPTIONS":
            await self._preflight(headers, send, rejection is None)
            return
        rejection = rejection or self.security.check_token(headers, scope.get("query_string", b""))
        if kind == "websocket":
            await serve_websocket(self, scope, receive, send, rejection)
            return
        cors = self._cors(headers)
        if rejection is not None:
            await respond(
                send, rejection.status, rejection.message, headers=(*cors, *rejection.headers)
            )
        elif scope["method"] == "POST":
            await handle_post(self, headers, receive, send, cors)
        elif scope["method"] == "GET":
            await handle_get(self, headers, receive, send, cors)
        elif scope["method"] == "DELETE":
            await handle_delete(self, headers, send, cors)
        else:
            await respond(
                send,
                405,
                "use POST, GET or DELETE",
                headers=(*cors, ("Allow", "GET, POST, DELETE, OPTIONS")),
            )

    async def _health(self, scope: Scope, send: Send) -> None:
        """For load balancers' checks: before any token, Host or Origin check, and it says
        only whether this server takes connections."""
        if scope["method"] not in ("GET", "HEAD"):
            await respond(send, 405, "use GET", headers=(("Allow", "GET, HEAD"),))
        elif self._closing:
            await respond(send, 503, "shutting down\n", headers=(("Cache-Control", "no-store"),))
        else:
            await respond(send, 200, "ok\n", headers=(("Cache-Control", "no-store"),))

    def _on_path(self, scope: Scope) -> bool:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path.rstrip("/") == self.path.rstrip("/") or (self.path == "/" and path == "")

    def _cors(self, headers: dict[str, str]) -> Headers:
        origin = headers.get("origin")
        if origin is None or not self.security.origin_allowed(origin):
            return ()
        return (
            ("Access-Control-Allow-Origin", origin),
            ("Vary", "Origin"),
            ("Access-Control-Expose-Headers", EXPOSED_HEADERS),
            ("Access-Control-Allow-Credentials", "true"),
        )

    async def _preflight(self, headers: dict[str, str], send: Send, allowed: bool) -> None:
        if not allowed or "origin" not in headers:
            await respond(send, 403, "Origin not allowed")
            return
        extra = (
            ("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", ALLOWED_HEADERS),
            ("Access-Control-Max-Age", "600"),
        )
        await respond(send, 204, headers=(*self._cors(headers), *extra))

    # -- connections ------------------------------------------------------------------

    def has_room(self) -> bool:
        """Whether another connection may open (the server is not closing and is below
        `limits.max_connections`)."""
        return not self._closing and len(self.connections) < self.limits.max_connections

    def new_connection(self, *, multiplex: bool) -> RemoteConnection:
        """Register a new remote connection (`multiplex`: a WebSocket's, whose one stream
        carries everything); idle connections are reaped after `limits.idle_timeout`."""
        connection = RemoteConnection(
            str(uuid.uuid4()), self.limits, multiplex=multiplex, on_closed=self._forget
        )
        self.connections[connection.id] = connection
        self._start_reaper()
        return connection

    async def start_agent(self, connection: RemoteConnection) -> None:
        """Start the connection's agent (in-process, or a subprocess for a command)."""
        await connection.start(self.agent, unstable=self.unstable, cwd=self.cwd, env=self.env)

    def find_connection(self, headers: dict[str, str]) -> tuple[RemoteConnection | None, int, str]:
        """The open connection a request names in its connection header, or None with the
        HTTP status and message to answer (400 without the header, 404 for an unknown one)."""
        connection_id = headers.get(CONNECTION_HEADER.lower())
        if connection_id is None:
            return None, 400, f"missing {CONNECTION_HEADER}"
        connection = self.connections.get(connection_id)
        if connection is None or connection.closed:
            return None, 404, f"unknown {CONNECTION_HEADER}"
        connection.touch()
        return connection, 200, ""

    def _forget(self, connection: RemoteConnection) -> None:
        if self.connections.get(connection.id) is connection:
            del self.connections[connection.id]
        if not self.connections and self._reaper is not None:
            self._reaper.cancel()  # it runs only while there are connections
            self._reaper = None

    async def initialize_http(self, frame: bytes, env: Envelope, send: Send, cors: Headers) -> None:
        """A new streamable HTTP connection: start its agent, answer with its initialize reply."""
        if not self.has_room():
            await respond(send, 503, "too many connections", headers=(*cors, ("Retry-After", "5")))
            return
        connection = self.new_connection(multiplex=False)
        try:
            await self.start_agent(connection)
            answer = await connection.initialize(frame, env.id)
        except InitializeFailed as exc:
            await connection.aclose()
            await respond_json(
                send, exc.status, jsonrpc_error(env.id, INTERNAL_ERROR, str(exc)), headers=cors
            )
            return
        except Exception:
            log.exception("connection %s: could not start the agent", connection.id)
            await connection.aclose()
            await respond_json(
                send,
                502,
                jsonrpc_error(env.id, INTERNAL_ERROR, "could not start the agent"),
                headers=cors,
            )
            return
        await respond_json(send, 200, answer, headers=(*cors, (CONNECTION_HEADER, connection.id)))

    async def aclose(self) -> None:
        """Close every connection (their agents stop) and stop the idle reaper."""
        self._closing = True
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            await asyncio.wait({reaper})
        await asyncio.gather(
            *(c.aclose() for c in list(self.connections.values())), return_exceptions=True
        )

    # -- housekeeping -----------------------------------------------------------------

    def _start_reaper(self) -> None:
        if (self._reaper is None or self._reaper.done()) and not self._closing:
            # Owner: the app; cancelled when the last connection goes, and by aclose.
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        """Close connections nobody listens to any more, and ones whose output is stuck."""
        period = max(0.05, min(self.limits.idle_timeout, self.limits.stall_timeout) / 4)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for connection in list(self.connections.values()):
                idle = (
                    not connection.has_receiver
                    and now - connection.last_active > self.limits.idle_timeout
                )
                stalled = (
                    connection.paused_since is not None
                    and now - connection.paused_since > self.limits.stall_timeout
                )
                if idle or stalled:
                    log.info(
                        "connection %s: closing (%s)",
                        connection.id,
                        "idle" if idle else "output stalled",
                    )
                    connection.close_soon()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
