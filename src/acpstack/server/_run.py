"""Run an `AgentServer` on uvicorn (the `remote` extra): HTTP/1.1 with httptools when it is
installed, WebSocket with the `websockets` library, TLS from a certificate and key file.

uvicorn does not speak HTTP/2; the RFD asks for it, but no implementation needs it to
interoperate. `AgentServer` is a plain ASGI app, so Hypercorn serves it over HTTP/2 too.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import re
import signal
import socket
from collections.abc import Callable
from typing import Any

from acpstack.server._app import AgentServer
from acpstack.server._guard import guarded_protocol
from acpstack.server._ws_protocol import direct_protocol
from acpstack.transports import require_extra

log = logging.getLogger("acpstack.server")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def serve_remote(
    app: AgentServer,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    sock: socket.socket | None = None,
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    ssl_keyfile_password: str | None = None,
    log_level: str = "warning",
    on_ready: Callable[[socket.socket], None] | None = None,
    stop: asyncio.Event | None = None,
    drain: asyncio.Event | None = None,
    asgi: Any = None,
) -> None:
    """Serve `app` until the process is told to stop (SIGINT or SIGTERM) or `stop` is set;
    every connection's agent is stopped before this returns. SIGTERM (or setting `drain`)
    drains first: no new connections, running turns get `limits.drain_timeout` to end;
    then this returns (the SIGTERM is not raised again, so a drained process exits 0). `on_ready` gets the listening
    socket once requests are accepted. `asgi` runs instead of `app` when given (e.g. `app`
    wrapped in your own middleware); `app`'s limits and shutdown still apply."""
    uvicorn: Any = require_extra("uvicorn")
    require_extra("websockets")
    sock = sock or bind_socket(host, port)
    config = uvicorn.Config(
        asgi if asgi is not None else app,
        http=_http_protocol(app),
        h11_max_incomplete_event_size=app.limits.max_header_bytes,
        ws=_ws_protocol(),
        ws_max_size=app.limits.max_message_size,
        ws_per_message_deflate=False,
        lifespan="on",
        access_log=False,  # request lines may carry ?token=
        log_level=log_level,
        server_header=False,
        # nothing reads the client's address (scope["client"]): no X-Forwarded-For parsing
        proxy_headers=False,
        timeout_graceful_shutdown=5,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        ssl_keyfile_password=ssl_keyfile_password,
    )
    _redact_uvicorn_logs(app.security.token)
    server = _server_class(uvicorn.Server)(
        config, app, (lambda: on_ready(sock)) if on_ready is not None else None
    )
    stoppers = [
        asyncio.ensure_future(_stop_when(event, server, draining))
        for event, draining in ((stop, False), (drain, True))
        if event is not None
    ]
    try:
        await server.serve(sockets=[sock])
    finally:
        for stopper in stoppers:
            stopper.cancel()
        await app.aclose()
        sock.close()


def _http_protocol(app: AgentServer) -> Any:
    """httptools with the guard `_guard` adds (header size and time limits, the cap on
    untrusted connections); h11 (its header limit only) when httptools is missing."""
    if importlib.util.find_spec("httptools") is None:
        return "h11"
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return guarded_protocol(HttpToolsProtocol, app.limits, app.guard)


def _ws_protocol() -> Any:
    """uvicorn's sans-IO WebSocket protocol with the hot path shortened (`_ws_protocol`)."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    return direct_protocol(WebSocketsSansIOProtocol)


class _QuietHandshakeRefusals(logging.Filter):
    """uvicorn logs an ERROR for every WebSocket handshake the application refuses with an
    HTTP answer (401, 403, 421, 503): a client could fill the logs with them. The server
    logs those refusals itself, at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.levelno >= logging.ERROR
            and record.msg == "ASGI callable returned without completing handshake."
        )


class _Redact(logging.Filter):
    """Takes tokens out of log lines (uvicorn logs WebSocket paths with their query)."""

    def __init__(self, token: str | None) -> None:
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = _TOKEN_QUERY.sub(r"\1[redacted]", text)
        if self.token:
            clean = clean.replace(self.token, "[redacted]")
        if clean != text:
            record.msg, record.args = clean, ()
        return True


_TOKEN_QUERY = re.compile(r"([?&]token=)[^&\s\"']*")


def _redact_uvicorn_logs(token: str | None) -> None:
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, _Redact | _QuietHandshakeRefusals)]:
            logger.removeFilter(old)
        logger.addFilter(_QuietHandshakeRefusals())
        logger.addFilter(_Redact(token))


async def _stop_when(stop: asyncio.Event, server: Any, drain: bool) -> None:
    await stop.wait()
    server.drain = server.drain or drain
    server.should_exit = True


def _server_class(base: Any) -> Any:
    class Server(base):  # type: ignore[misc]
        """uvicorn's server, which ends our streams before it waits for requests to finish
        (an SSE stream or a WebSocket never finishes on its own), and says when it listens."""

        def __init__(
            self, config: Any, app: AgentServer, on_ready: Callable[[], None] | None
        ) -> None:
            super().__init__(config)
            self.acp_app = app
            self.on_ready = on_ready
            self.drain = False

        def handle_exit(self, sig: int, frame: Any) -> None:
            if sig == signal.SIGTERM:
                self.drain = True
            super().handle_exit(sig, frame)
            if sig == signal.SIGTERM and sig in getattr(self, "_captured_signals", []):
                # the drain is the answer to SIGTERM: uvicorn would raise it again once
                # serving ends, and the process would die of it instead of exiting 0
                self._captured_signals.remove(sig)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.on_ready is not None and not self.should_exit:
                self.on_ready()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            if self.drain:  # still listening: /readyz says 503, new connections get 503
                await self.acp_app.drain()
            await self.acp_app.aclose()
            await super().shutdown(sockets)

    return Server
