"""The WebSocket profile: `GET /acp` with `Upgrade: websocket`, one JSON-RPC message per
text frame in each direction, everything on the one socket in order.

The handshake answer (101) carries `Acp-Connection-Id`. The first message must be
`initialize` (else the socket closes with 1002); the agent starts then. Binary frames are
ignored; a batch gets one -32600 error unless batches are switched on; a message over the
size limit closes with 1009.

Resuming (docs/remote.md): the handshake answer says `Acp-Resumable: 1`. A client whose
socket broke opens a new one with `Acp-Connection-Id` and `Last-Event-ID: <how many
messages it received>`; the answer (101) carries `Acp-Received: <how many of the
client's messages the server received>`, then every message the client missed comes
again, in order, then the live stream; the client sends again what the server did not
receive. A client that closes with 1000 or 1001 ends the connection; one that vanishes
(no close frame) leaves it, with its turns running, until the detach timeout. A refused handshake (bad Origin or Host, no token, too many
connections) is answered with its HTTP status when the server supports it, else closed,
and logged at most once a second (a client refused in a loop must not fill the logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from acpstack._tasks import cancel_and_wait
from acpstack.server._asgi import Message, Receive, Scope, Send, header_map, jsonrpc_error
from acpstack.server._connection import RemoteConnection
from acpstack.server._security import Rejection
from acpstack.server._streams import OutboundStream, ResumeRefused
from acpstack.server._websocket_direct import DirectChannel, direct_socket
from acpstack.server._ws_protocol import DirectSocket
from acpstack.transports import LAST_EVENT_HEADER, RECEIVED_HEADER, peek_envelope, single_line
from acpstack.wire import HANDSHAKE_METHODS, INVALID_REQUEST, PARSE_ERROR

if TYPE_CHECKING:
    from acpstack.server._app import AgentServer

log = logging.getLogger("acpstack.server")

PROTOCOL_ERROR, INTERNAL_ERROR, TOO_BIG, SERVICE_RESTART = 1002, 1011, 1009, 1012
# close codes of a client that meant to leave; any other end (1006: no close frame) keeps
# the connection for a resume until the detach timeout
CLIENT_CLOSED = frozenset({1000, 1001})


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
    headers = header_map(scope)
    last = headers.get(LAST_EVENT_HEADER.lower())
    resumed: RemoteConnection | None = None
    if rejection is None and last is not None:
        resumed, rejection = _connection_to_resume(app, headers, principal)
    if rejection is None and resumed is None and not app.has_room():
        rejection = Rejection(503, "too many connections")
    if rejection is not None:
        app.refusal_log.refused(rejection)
        await _reject(scope, send, rejection)
        return
    if resumed is not None and last is not None:
        try:
            receiver = await _take_over(resumed, int(last))
        except ResumeRefused as exc:
            log.info("connection %s: not resumed: %s", resumed.id, exc)
            await _reject(scope, send, Rejection(410, f"this connection cannot be resumed: {exc}"))
            return
        connection = resumed
    else:
        connection = app.new_connection(multiplex=True, principal=principal)
        receiver = connection.connection_stream.attach()
    stream = connection.connection_stream
    accepted = [(b"acp-connection-id", connection.id.encode())]
    accepted += [(k.lower().encode(), v.encode()) for k, v in app.resumable]
    if resumed is not None:
        accepted.append((RECEIVED_HEADER.lower().encode(), str(connection.received).encode()))
    await send({"type": "websocket.accept", "headers": accepted})
    direct = direct_socket(scope)  # messages without ASGI's queue and send (serve_remote)
    read_from: Callable[[], Awaitable[Message | bytes]]
    if direct is not None:
        channel = _direct_channel(app, connection, direct, receive, receiver)
        pump = asyncio.ensure_future(channel.pump())
        read_from = channel.receive
    else:
        pump = asyncio.ensure_future(_pump(stream, receiver, send))
        read_from = receive
    reader = connection.reader = asyncio.ensure_future(
        _read(app, connection, read_from, stream, started=resumed is not None)
    )
    close_code = 1000  # the connection ended on our side (agent gone, DELETE, shutdown)
    keep = False  # the client went away without closing, or resumed elsewhere: keep it
    try:
        await asyncio.wait({pump, reader}, return_when=asyncio.FIRST_COMPLETED)
        if not stream.current(receiver):
            keep = True  # resumed on another socket: this one is dead or dying
        elif reader.done() and not reader.cancelled():
            close_code, keep = reader.result()
        elif app.draining:
            close_code = SERVICE_RESTART  # reconnect (through a load balancer: elsewhere)
    finally:
        if connection.reader is reader:
            connection.reader = None
        reader.cancel()
        if keep and not connection.closed:
            stream.detach(receiver)
            connection.touch()  # the detach timeout (`idle_timeout`) starts now
            pump.cancel()
        else:
            await connection.aclose()
        await asyncio.wait({pump, reader})  # both end now
        for task in (pump, reader):
            error = None if task.cancelled() else task.exception()
            if error is not None:
                log.debug("connection %s: %r", connection.id, error)
    if close_code != 0:
        with contextlib.suppress(Exception):
            await send({"type": "websocket.close", "code": close_code})


async def _take_over(connection: RemoteConnection, last: int) -> int:
    """Rewind the connection's stream to after `last` and claim it for a new socket: the
    receiver's number (`ResumeRefused` when the stream cannot be resumed from there)."""
    stream = connection.connection_stream
    stream.resume(last)
    receiver = stream.attach(takeover=True)
    previous, connection.reader = connection.reader, None
    if previous is not None:  # a dead socket's reader must count no more messages
        await cancel_and_wait(previous)
    log.info("connection %s: resumed after position %s", connection.id, last)
    return receiver


def _connection_to_resume(
    app: AgentServer, headers: dict[str, str], principal: str | None
) -> tuple[RemoteConnection | None, Rejection | None]:
    connection, status, text = app.find_connection(headers, principal)
    if connection is None:
        return None, Rejection(status, text)
    if not connection.multiplex:
        return None, Rejection(400, "that connection is not a WebSocket's")
    try:
        int(headers.get(LAST_EVENT_HEADER.lower(), ""))
    except ValueError:
        return None, Rejection(400, f"{LAST_EVENT_HEADER} must be a count of messages")
    return connection, None


async def _read(
    app: AgentServer,
    connection: RemoteConnection,
    receive: Callable[[], Awaitable[Message | bytes]],
    stream: OutboundStream,
    *,
    started: bool,
) -> tuple[int, bool]:
    """Relay the client's messages (ASGI messages, or a text message's bytes from a
    `DirectChannel`). Returns the close code to send (0: none, the client left) and
    whether to keep the connection for a resume (the client went away without a close
    frame: its network broke, or it died)."""
    limit = app.limits.max_message_size
    while True:
        message = await receive()
        if isinstance(message, bytes):
            data = message
        else:
            if message["type"] == "websocket.disconnect":
                code = message.get("code", 1005)
                return 0, code not in CLIENT_CLOSED
            text = message.get("text")
            if text is None:
                continue  # binary frames are ignored
            data = text.encode()
        connection.received += 1
        if len(data) > limit:
            return TOO_BIG, False
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
                return PROTOCOL_ERROR, False
            try:
                await app.start_agent(connection)
            except Exception:
                log.exception("connection %s: could not start the agent", connection.id)
                return INTERNAL_ERROR, False
            started = True
        try:
            await connection.deliver(single_line(data), env, None)
        except ConnectionResetError:
            return (1000 if connection.closed else INTERNAL_ERROR), False


def _direct_channel(
    app: AgentServer,
    connection: RemoteConnection,
    direct: DirectSocket,
    receive: Receive,
    receiver: int,
) -> DirectChannel:
    stream = connection.connection_stream

    def relay(data: bytes) -> bool:
        try:
            return _relay_now(app, connection, stream, receiver, data)
        except Exception:  # as the reader's failure would: the connection ends
            log.exception("connection %s: relaying a message failed", connection.id)
            connection.close_soon()
            return True

    return DirectChannel(direct, receive, stream, receiver, relay)


def _relay_now(
    app: AgentServer,
    connection: RemoteConnection,
    stream: OutboundStream,
    receiver: int,
    data: bytes,
) -> bool:
    """`_read`'s work for a usual text message (a JSON object within the size limit, the
    agent started, no sharing or reattach), done as it arrives while the reader waits
    with nothing queued: no task is woken, and the agent's answer may go out before this
    returns. False, and nothing done, for any other message: the reader takes it, in order."""
    if data[:1] != b"{" or len(data) > app.limits.max_message_size:
        return False
    if not stream.current(receiver):  # resumed on another socket: this one counts no more
        return False
    try:
        env = peek_envelope(data)
    except msgspec.DecodeError:
        return False
    if env.kind == "invalid" or not connection.deliver_now(single_line(data), env):
        return False
    connection.received += 1
    return True


async def _pump(stream: OutboundStream, receiver: int, send: Send) -> None:
    """Send what the agent says, in order, until the connection closes or another socket
    resumed it."""
    while stream.current(receiver):
        _first, frames = stream.take()
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
