"""The WebSocket profile: `GET /acp` with `Upgrade: websocket`, one JSON-RPC message per
text frame in each direction, everything on the one socket in order.

The handshake answer (101) carries `Acp-Connection-Id`. The first message must be
`initialize` (else the socket closes with 1002); the agent starts then. Binary frames are
ignored; a batch gets one -32600 error unless batches are switched on; a message over the
size limit closes with 1009. A refused handshake (bad Origin or Host, no token, too many
connections) is answered with its HTTP status when the server supports it, else closed,
and logged at most once a second (a client refused in a loop must not fill the logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from acpstack.server._asgi import Receive, Scope, Send, jsonrpc_error
from acpstack.server._connection import RemoteConnection
from acpstack.server._security import Rejection
from acpstack.server._streams import OutboundStream
from acpstack.server._websocket_direct import DirectChannel, direct_socket
from acpstack.transports import peek_envelope, single_line
from acpstack.wire import HANDSHAKE_METHODS, INVALID_REQUEST, PARSE_ERROR

if TYPE_CHECKING:
    from acpstack.server._app import AgentServer

log = logging.getLogger("acpstack.server")

PROTOCOL_ERROR, INTERNAL_ERROR, TOO_BIG, SERVICE_RESTART = 1002, 1011, 1009, 1012


async def serve_websocket(
    app: AgentServer,
    scope: Scope,
    receive: Receive,
    send: Send,
    rejection: Rejection | None,
    principal: str | None = None,
) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    if rejection is None and not app.has_room():
        rejection = Rejection(503, "too many connections")
    if rejection is not None:
        app.refusal_log.refused(rejection)
        await _reject(scope, send, rejection)
        return
    connection = app.new_connection(multiplex=True, principal=principal)
    await send(
        {"type": "websocket.accept", "headers": [(b"acp-connection-id", connection.id.encode())]}
    )
    stream = connection.connection_stream
    stream.attach()
    direct = direct_socket(scope)  # messages without ASGI's queue and send (serve_remote)
    if direct is not None:
        channel = DirectChannel(direct, receive, stream)
        pump = asyncio.ensure_future(channel.pump())
        reader = asyncio.ensure_future(_read(app, connection, channel.receive, stream))
    else:
        pump = asyncio.ensure_future(_pump(stream, send))
        reader = asyncio.ensure_future(_read(app, connection, receive, stream))
    close_code = 1000  # the connection ended on our side (agent gone, DELETE, shutdown)
    try:
        await asyncio.wait({pump, reader}, return_when=asyncio.FIRST_COMPLETED)
        if reader.done():
            close_code = reader.result()
        elif app.draining:
            close_code = SERVICE_RESTART  # reconnect (through a load balancer: elsewhere)
    finally:
        reader.cancel()
        await connection.aclose()
        await asyncio.wait(
            {pump, reader}
        )  # both end now: the stream is closed, the reader cancelled
        for task in (pump, reader):
            error = None if task.cancelled() else task.exception()
            if error is not None:
                log.debug("connection %s: %r", connection.id, error)
    if close_code != 0:
        with contextlib.suppress(Exception):
            await send({"type": "websocket.close", "code": close_code})


async def _read(
    app: AgentServer, connection: RemoteConnection, receive: Receive, stream: OutboundStream
) -> int:
    """Relay the client's messages; returns the close code to send (0: the client left)."""
    limit = app.limits.max_message_size
    started = False
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return 0
        text = message.get("text")
        if text is None:
            continue  # binary frames are ignored
        data = text.encode()
        if len(data) > limit:
            return TOO_BIG
        if data.lstrip()[:1] == b"[":
            stream.push(jsonrpc_error(None, INVALID_REQUEST, "JSON-RPC batches are not supported"))
            continue
        try:
            env = peek_envelope(data)
        except msgspec.DecodeError:
            stream.push(jsonrpc_error(None, PARSE_ERROR, "Parse error: the message is not JSON"))
            continue
        if env.kind == "invalid":
            stream.push(jsonrpc_error(None, INVALID_REQUEST, "Invalid Request"))
            continue
        if not started:
            if env.kind != "request" or env.method not in HANDSHAKE_METHODS:
                return PROTOCOL_ERROR
            try:
                await app.start_agent(connection)
            except Exception:
                log.exception("connection %s: could not start the agent", connection.id)
                return INTERNAL_ERROR
            started = True
        try:
            await connection.deliver(single_line(data), env, None)
        except ConnectionResetError:
            return 1000 if connection.closed else INTERNAL_ERROR


async def _pump(stream: OutboundStream, send: Send) -> None:
    """Send what the agent says, in order, until the connection closes."""
    while True:
        frames = stream.take()
        for frame in frames:
            await send({"type": "websocket.send", "text": frame.decode()})
        if not frames:
            if stream.closed:
                return
            await stream.wait(3600.0)


class RefusalLog:
    """One INFO line a second at most about refused WebSocket handshakes; the next line
    written says how many were left out meanwhile."""

    def __init__(self, interval: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval: float = interval
        self.clock: Callable[[], float] = clock
        self._quiet_until = float("-inf")
        self.left_out: int = 0

    def refused(self, rejection: Rejection) -> None:
        now = self.clock()
        if now < self._quiet_until:
            self.left_out += 1
            return
        self._quiet_until = now + self.interval
        left_out, self.left_out = self.left_out, 0
        more = f" (and {left_out} more not logged since the last line)" if left_out else ""
        log.info("WebSocket handshake refused: %d %s%s", rejection.status, rejection.message, more)


async def _reject(scope: Scope, send: Send, rejection: Rejection) -> None:
    if "websocket.http.response" in scope.get("extensions", {}):
        body = rejection.message.encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        headers += [(k.lower().encode(), v.encode()) for k, v in rejection.headers]
        await send(
            {
                "type": "websocket.http.response.start",
                "status": rejection.status,
                "headers": headers,
            }
        )
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:
        await send({"type": "websocket.close", "code": 1008})
