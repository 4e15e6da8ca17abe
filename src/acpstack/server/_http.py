"""The streamable HTTP profile: POST (client messages), GET (SSE streams), DELETE.

Status codes follow the RFD: 415 for a body that is not JSON, 406 for a GET that does not
accept an event stream, 400 for a missing or mismatched id, 404 for an unknown connection,
409 for a second receiver on one stream, 413 for a message over the size limit, 501 for
a batch (unless batches are switched on), 410 for a stream that cannot be resumed from
the position asked for. Liberal where implementations differ: a session
stream may be opened before the session exists (it holds messages until then), a reply
to the agent may come without `Acp-Session-Id`, and a session-scoped POST may name its
session only in `params.sessionId`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import msgspec

from acpstack.server._asgi import (
    CLOSE,
    BodyRefused,
    Headers,
    Receive,
    Send,
    jsonrpc_error,
    read_body,
    respond,
    respond_json,
    start_message,
)
from acpstack.server._streams import OutboundStream, ResumeRefused
from acpstack.transports import (
    CONNECTION_HEADER,
    LAST_EVENT_HEADER,
    ONE_STREAM_HEADER,
    RETRY_HEADER,
    SSE_KEEPALIVE,
    Envelope,
    peek_envelope,
    single_line,
)
from acpstack.wire import HANDSHAKE_METHODS, INVALID_REQUEST, PARSE_ERROR

if TYPE_CHECKING:
    from acpstack.server._app import AgentServer

log = logging.getLogger("acpstack.server")

SSE_HEADERS = (
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),
)


async def handle_post(
    app: AgentServer,
    headers: dict[str, str],
    receive: Receive,
    send: Send,
    cors: Headers,
    principal: str | None = None,
) -> None:
    if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        await respond(send, 415, "Content-Type must be application/json", headers=(*cors, *CLOSE))
        return
    limits = app.limits
    try:
        body = await read_body(
            receive, limits.max_message_size, limits.body_timeout, headers.get("content-length")
        )
    except BodyRefused as exc:
        await respond(send, exc.status, str(exc), headers=(*cors, *CLOSE))
        return
    if body is None:
        return  # the client left
    if body.lstrip()[:1] == b"[":
        await _post_batch(app, headers, body, send, cors, principal)
        return
    try:
        env = peek_envelope(body)
    except msgspec.DecodeError as exc:
        reason = "nested too deeply" if "nested too deeply" in str(exc) else "not JSON"
        await respond_json(
            send,
            400,
            jsonrpc_error(None, PARSE_ERROR, f"Parse error: the body is {reason}"),
            headers=cors,
        )
        return
    problem = _check(app, env)
    if problem is not None:
        await respond_json(send, 400, jsonrpc_error(None, INVALID_REQUEST, problem), headers=cors)
        return
    # the body as it came is dropped here, so a re-encoded one is never held beside it
    body = single_line(body)
    # `initialize`, or the `proxy/initialize` a conductor opens a connection to a proxy with
    if env.kind == "request" and env.method in HANDSHAKE_METHODS:
        if CONNECTION_HEADER.lower() in headers:
            await respond(
                send, 400, f"{env.method} is not allowed on an existing connection", headers=cors
            )
            return
        one_stream = headers.get(ONE_STREAM_HEADER.lower()) == "1"
        await app.initialize_http(body, env, send, cors, principal, one_stream=one_stream)
        return
    status, text = await _deliver(app, headers, body, env, principal)
    await respond(send, status, text, headers=cors)


def _is_retry(headers: dict[str, str]) -> bool:
    value = headers.get(RETRY_HEADER.lower())
    return value is not None and "1" in (part.strip() for part in value.split(","))


def _check(app: AgentServer, env: Envelope) -> str | None:
    if env.kind == "invalid":
        return "Invalid Request: not a JSON-RPC request, notification or response"
    if isinstance(env.id, str) and len(env.id) > app.limits.max_id_length:
        return f"Invalid Request: ids may hold at most {app.limits.max_id_length} characters"
    return None


async def _deliver(
    app: AgentServer,
    headers: dict[str, str],
    frame: bytes,
    env: Envelope,
    principal: str | None = None,
) -> tuple[int, str]:
    connection, status, text = app.find_connection(headers, principal)
    if connection is None:
        return status, text
    header_session = headers.get("acp-session-id")
    if (
        header_session is not None
        and env.session_id is not None
        and header_session != env.session_id
    ):
        return 400, "Acp-Session-Id does not match params.sessionId"
    try:
        await connection.deliver(frame, env, header_session, retry=_is_retry(headers))
    except ConnectionResetError:
        return 404, "unknown Acp-Connection-Id (the connection has closed)"
    return 202, ""


async def _post_batch(
    app: AgentServer,
    headers: dict[str, str],
    body: bytes,
    send: Send,
    cors: Headers,
    principal: str | None,
) -> None:
    if not app.limits.accept_batches:
        await respond_json(
            send,
            501,
            jsonrpc_error(None, INVALID_REQUEST, "JSON-RPC batches are not supported"),
            headers=cors,
        )
        return
    try:
        items = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        await respond_json(
            send,
            400,
            jsonrpc_error(None, PARSE_ERROR, "Parse error: the body is not JSON"),
            headers=cors,
        )
        return
    frames = [msgspec.json.encode(item) for item in items]
    envelopes = [peek_envelope(frame) for frame in frames]
    for env in envelopes:
        problem = _check(app, env) or (
            f"{env.method} must be sent alone" if env.method in HANDSHAKE_METHODS else None
        )
        if problem is not None:
            await respond_json(
                send, 400, jsonrpc_error(None, INVALID_REQUEST, problem), headers=cors
            )
            return
    status, text = 400, "empty batch"
    for frame, env in zip(frames, envelopes, strict=True):
        status, text = await _deliver(app, headers, frame, env, principal)
        if status != 202:
            break
    await respond(send, status, text, headers=cors)


async def handle_get(
    app: AgentServer,
    headers: dict[str, str],
    receive: Receive,
    send: Send,
    cors: Headers,
    principal: str | None = None,
) -> None:
    if "websocket" in headers.get("upgrade", "").lower():
        await respond(send, 426, "this server does not accept WebSocket upgrades", headers=cors)
        return
    accept = headers.get("accept", "").lower()
    if not any(kind in accept for kind in ("text/event-stream", "text/*", "*/*")):
        await respond(send, 406, "GET needs Accept: text/event-stream", headers=cors)
        return
    connection, status, text = app.find_connection(headers, principal)
    if connection is None:
        await respond(send, status, text, headers=cors)
        return
    session_id = headers.get("acp-session-id")
    if session_id is not None and connection.multiplex:
        await respond(
            send,
            400,
            "this connection sends every session's messages on its one stream (Acp-One-Stream)",
            headers=cors,
        )
        return
    stream = (
        connection.connection_stream
        if session_id is None
        else connection.session_stream(session_id)
    )
    if stream is None:
        await respond(
            send,
            429,
            f"a connection may have at most {app.limits.max_session_streams} session streams",
            headers=cors,
        )
        return
    last = headers.get(LAST_EVENT_HEADER.lower())
    if last is not None:
        problem = _resume(stream, last)
        if problem is not None:
            await respond(send, problem[0], problem[1], headers=cors)
            return
    receiver = stream.attach(takeover=last is not None)
    if not receiver:
        await respond(send, 409, "this stream already has a receiver", headers=cors)
        return
    try:
        await _stream_events(app, stream, receiver, receive, send, cors)
    finally:
        connection.release(stream, receiver)


def _resume(stream: OutboundStream, last: str) -> tuple[int, str] | None:
    """Rewind the stream to after `last` (a Last-Event-ID); an HTTP status and message
    when it cannot be."""
    try:
        position = int(last)
    except ValueError:
        return 400, f"{LAST_EVENT_HEADER} must be a position this server sent, not {last!r}"
    try:
        stream.resume(position)
    except ResumeRefused as exc:
        return 410, f"this stream cannot be resumed: {exc}"
    return None


def sse_events(first: int, frames: list[bytes]) -> bytes:
    """Server-sent events for `frames`, positions `first` on. Only the first of them says
    its id: the next ones are the positions after it (a client counts them), and the
    stream saves a formatting per message."""
    return b"id: %d\ndata: " % first + b"\n\ndata: ".join(frames) + b"\n\n"


async def _stream_events(
    app: AgentServer,
    stream: OutboundStream,
    receiver: int,
    receive: Receive,
    send: Send,
    cors: Headers,
) -> None:
    await send(start_message(200, (*SSE_HEADERS, *cors)))
    gone: asyncio.Future[object] = asyncio.ensure_future(_disconnected(receive))
    try:
        while stream.current(receiver):
            first, frames = stream.take()
            if frames:
                body = sse_events(first, frames)
                await send({"type": "http.response.body", "body": body, "more_body": True})
                continue
            if stream.closed or gone.done():
                break
            if not await stream.wait(app.limits.keepalive_interval, gone):
                await send({"type": "http.response.body", "body": SSE_KEEPALIVE, "more_body": True})
        if not gone.done():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        gone.cancel()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def handle_delete(
    app: AgentServer,
    headers: dict[str, str],
    send: Send,
    cors: Headers,
    principal: str | None = None,
) -> None:
    connection, status, text = app.find_connection(headers, principal)
    if connection is None:
        await respond(send, status, text, headers=cors)
        return
    await connection.aclose()
    await respond(send, 202, headers=cors)
