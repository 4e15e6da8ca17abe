"""`AgentServer`: remote ACP as an ASGI 3 application (mount it anywhere, or run it with
`serve_remote`). One endpoint (`/acp` by default) serves both profiles: streamable HTTP
(POST, GET with server-sent events, DELETE) and WebSocket. Every connection gets its own
agent: a new instance of a Python `Agent` (in this process), or a new process of a stdio
agent command; the agent ends with the connection.

`GET /healthz` (`health_path`) answers 200 while the process is alive (503 once it has
closed its connections); it touches neither the store nor the agents. `GET /readyz`
(`ready_path`) answers 200 when the server takes new connections, 404 while it is full or
draining (no new clients, but keep the connections it holds: HAProxy's
`http-check disable-on-404`), 503 when `readiness` (e.g. "the session store answers")
fails. Neither needs a token, and neither says anything about sessions. `GET /metrics`
(`metrics_path`, with the token) is for Prometheus.

`drain()` (what `serve_remote` does on SIGTERM): new connections get 503 and `/readyz`
404, running turns get up to `limits.drain_timeout` to finish, then every connection
closes (a WebSocket with 1012, "service restart": clients reconnect, through a load
balancer to another server).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping

from acpstack.server._agents import AgentSource
from acpstack.server._asgi import (
    CLOSE,
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
from acpstack.server._guard import GuardCounters, trust
from acpstack.server._http import handle_delete, handle_get, handle_post
from acpstack.server._limits import ServerLimits
from acpstack.server._metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from acpstack.server._metrics import ServerStats, render
from acpstack.server._security import ALLOWED_HEADERS, EXPOSED_HEADERS, ServerSecurity
from acpstack.server._websocket import RefusalLog, serve_websocket
from acpstack.transports import (
    CONNECTION_HEADER,
    ONE_STREAM_HEADER,
    RESUMABLE_HEADER,
    Envelope,
)
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
        ready_path: str | None = "/readyz",
        readiness: Callable[[], bool] | None = None,
        metrics_path: str | None = "/metrics",
    ) -> None:
        self.agent = agent
        self.path: str = "/" + path.strip("/")
        self.health_path = health_path
        self.ready_path = ready_path
        self.readiness = readiness  # blocking (a store query): runs in a thread
        self._readiness_check: asyncio.Future[bool] | None = None
        self.security: ServerSecurity = security or ServerSecurity()
        self.limits: ServerLimits = limits or ServerLimits()
        self.unstable = unstable
        self.cwd = cwd
        self.env = env
        self.connections: dict[str, RemoteConnection] = {}
        self.guard: GuardCounters = GuardCounters()  # kept by `serve_remote`'s HTTP protocol
        self.stats: ServerStats = ServerStats()  # what /metrics shows (the store's hooks are on it)
        self.refusal_log: RefusalLog = (
            RefusalLog()
        )  # refused WebSocket handshakes, one line a second
        self.metrics_path = metrics_path
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False
        self.draining: bool = False
        self._turns_done = asyncio.Event()

    # -- ASGI -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind not in ("http", "websocket"):
            return
        if kind == "http" and scope.get("path") in (self.health_path, self.ready_path):
            await self._health(scope, send)
            return
        headers = header_map(scope)
        metrics = kind == "http" and scope.get("path") == self.metrics_path
        if not metrics and not self._on_path(scope):
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
        query = scope.get("query_string", b"")
        rejection = rejection or self.security.check_token(headers, query)
        principal = self.security.principal(headers, query)
        if kind == "websocket":
            await serve_websocket(self, scope, receive, send, rejection, principal)
            return
        if rejection is None:
            trust(scope)
        cors = self._cors(headers)
        if metrics and rejection is None:
            await self._metrics(send)
            return
        if rejection is not None:
            await respond(
                send,
                rejection.status,
                rejection.message,
                headers=(*cors, *rejection.headers, *CLOSE),
            )
        elif scope["method"] == "POST":
            await handle_post(self, headers, receive, send, cors, principal)
        elif scope["method"] == "GET":
            await handle_get(self, headers, receive, send, cors, principal)
        elif scope["method"] == "DELETE":
            await handle_delete(self, headers, send, cors, principal)
        else:
            await respond(
                send,
                405,
                "use POST, GET or DELETE",
                headers=(*cors, ("Allow", "GET, POST, DELETE, OPTIONS")),
            )

    async def _health(self, scope: Scope, send: Send) -> None:
        """For load balancers' checks: before any token, Host or Origin check; says only
        whether this server is alive (`/healthz`) or takes new connections (`/readyz`)."""
        if scope["method"] not in ("GET", "HEAD"):
            await respond(send, 405, "use GET", headers=(("Allow", "GET, HEAD"),))
            return
        status, text = 200, "ok"
        if self._closing:
            status, text = 503, "shutting down"
        elif scope.get("path") != self.health_path and (self.draining or self._full()):
            # 404: HAProxy's `http-check disable-on-404` then sends this server no new
            # client but keeps routing the connections it holds (any other balancer
            # sees a failed check)
            status, text = 404, "draining" if self.draining else "full"
        elif scope.get("path") != self.health_path:
            problem = await self._not_ready()
            if problem is not None:
                status, text = 503, problem
        await respond(send, status, text + "\n", headers=(("Cache-Control", "no-store"),))

    def _full(self) -> bool:
        return len(self.connections) >= self.limits.max_connections

    async def _not_ready(self) -> str | None:
        if self.readiness is not None:
            # one check at a time: the checks of a hung store share it (no thread each)
            check = self._readiness_check
            if check is None or check.done():
                check = self._readiness_check = asyncio.ensure_future(
                    asyncio.to_thread(self.readiness)
                )
                # its failure is read by whoever waits; if nobody does any more, here
                check.add_done_callback(lambda done: done.cancelled() or done.exception())
            try:
                async with asyncio.timeout(self.limits.readiness_timeout):
                    ready = await asyncio.shield(check)
            except Exception as exc:  # the check's own failure is "not ready", not a 500
                log.info("readiness check failed: %r", exc)
                ready = False
            if not ready:
                return "not ready (the session store does not answer)"
        return None

    async def _metrics(self, send: Send) -> None:
        """Prometheus metrics (the token is asked for, as on the ACP endpoint)."""
        try:
            body = render(self.stats, self.guard, self._gauges)
        except ImportError:
            await respond(
                send, 501, 'metrics need the prometheus_client package: pip install ".[metrics]"\n'
            )
            return
        await respond(send, 200, body, content_type=METRICS_CONTENT_TYPE)

    def _gauges(self) -> dict[str, float]:
        live = list(self.connections.values())
        return {
            "connections": len(live),
            "sessions": sum(len(c.session_ids) for c in live),
            "turns_running": sum(len(c.turns) for c in live),
            "untrusted_tcp_connections": len(self.guard.waiting),
            "draining": float(self.draining),
        }

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
        return (
            not self._closing
            and not self.draining
            and len(self.connections) < self.limits.max_connections
        )

    def new_connection(self, *, multiplex: bool, principal: str | None = None) -> RemoteConnection:
        """Register a new remote connection (`multiplex`: a WebSocket's, whose one stream
        carries everything) of `principal` (the token's name; None without tokens); idle
        connections are reaped after `limits.idle_timeout`."""
        connection = RemoteConnection(
            str(uuid.uuid4()),
            self.limits,
            multiplex=multiplex,
            principal=principal,
            on_closed=self._forget,
            on_turn_end=self._turn_ended,
            on_reattach=self.let_go_of,
            stats=self.stats,
        )
        connection.peers = self.connections.values
        self.stats.connections_opened += 1
        self.connections[connection.id] = connection
        self._start_reaper()
        return connection

    async def start_agent(self, connection: RemoteConnection) -> None:
        """Start the connection's agent (in-process, or a subprocess for a command)."""
        await connection.start(self.agent, unstable=self.unstable, cwd=self.cwd, env=self.env)

    def find_connection(
        self, headers: dict[str, str], principal: str | None = None
    ) -> tuple[RemoteConnection | None, int, str]:
        """The open connection a request names in its connection header, or None with the
        HTTP status and message to answer (400 without the header, 404 for an unknown one,
        or one another principal opened)."""
        connection_id = headers.get(CONNECTION_HEADER.lower())
        if connection_id is None:
            return None, 400, f"missing {CONNECTION_HEADER}"
        connection = self.connections.get(connection_id)
        if connection is None or connection.closed or connection.principal != principal:
            return None, 404, f"unknown {CONNECTION_HEADER}"
        connection.touch()
        return connection, 200, ""

    def turns_running(self) -> int:
        """`session/prompt` requests not answered yet, over every connection."""
        return sum(len(c.turns) for c in self.connections.values())

    def _turn_ended(self) -> None:
        # only a drain waits for this: no count over every connection at each turn's end
        if self.draining and self.turns_running() == 0:
            self._turns_done.set()

    async def drain(self, timeout: float | None = None) -> bool:
        """Take no new connection, and wait (up to `timeout`, default
        `limits.drain_timeout`) for the running turns to end. True when they all did.
        `aclose()` then closes every connection."""
        self.draining = True
        running = self.turns_running()
        log.warning(
            "draining: %d turn(s) running, %d connection(s)", running, len(self.connections)
        )
        if running == 0:
            return True
        self._turns_done.clear()
        try:
            async with asyncio.timeout(self.limits.drain_timeout if timeout is None else timeout):
                while self.turns_running():
                    await self._turns_done.wait()
                    self._turns_done.clear()
        except TimeoutError:
            log.warning("drain: %d turn(s) still running, closing anyway", self.turns_running())
            return False
        return True

    def _forget(self, connection: RemoteConnection) -> None:
        if self.connections.get(connection.id) is connection:
            del self.connections[connection.id]
        self._turn_ended()
        if not self.connections and self._reaper is not None:
            self._reaper.cancel()  # it runs only while there are connections
            self._reaper = None

    async def initialize_http(
        self,
        frame: bytes,
        env: Envelope,
        send: Send,
        cors: Headers,
        principal: str | None,
        *,
        one_stream: bool = False,
    ) -> None:
        """A new streamable HTTP connection: start its agent, answer with its initialize
        reply. `one_stream`: the client asked for every message on the connection's stream
        (`Acp-One-Stream: 1`), as over WebSocket, not a stream per session."""
        if not self.has_room():
            await respond(send, 503, "too many connections", headers=(*cors, ("Retry-After", "5")))
            return
        connection = self.new_connection(multiplex=one_stream, principal=principal)
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
        said: Headers = ((ONE_STREAM_HEADER, "1"),) if one_stream else ()
        await respond_json(
            send,
            200,
            answer,
            headers=(*cors, (CONNECTION_HEADER, connection.id), *self.resumable, *said),
        )

    @property
    def resumable(self) -> Headers:
        """The header that says this server's connections can be resumed (none when
        `limits.replay_bytes` is 0)."""
        return ((RESUMABLE_HEADER, "1"),) if self.limits.replay_bytes > 0 else ()

    async def let_go_of(self, asking: RemoteConnection, session_id: str) -> None:
        """A connection is about to load or resume `session_id`: a connection of the same
        principal that holds it with nobody attached (its client went away and came back
        as a new connection, instead of resuming the old one) is closed, so that the
        session is free. A turn of that session still running there gets up to
        `limits.reattach_wait` seconds to finish first, so that the load replays it whole."""
        for other in list(self.connections.values()):
            if (
                other is not asking
                and session_id in other.session_ids
                and other.principal == asking.principal
                and not other.has_receiver
            ):
                if not await other.turns_end(session_id, self.limits.reattach_wait):
                    log.info("connection %s: its turn did not end in time", other.id)
                if other.has_receiver:  # its own client resumed it meanwhile
                    continue
                log.info(
                    "connection %s: closed, session %s reattached by connection %s",
                    other.id,
                    session_id,
                    asking.id,
                )
                await other.aclose()

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
        limits = self.limits
        sessionless = min(limits.idle_timeout, limits.sessionless_idle_timeout)
        period = max(0.05, min(sessionless, limits.stall_timeout) / 4)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for connection in list(self.connections.values()):
                allowed = limits.idle_timeout if connection.opened_session else sessionless
                idle = not connection.has_receiver and now - connection.last_active > allowed
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
