"""One JSON-RPC peer of a conductor or a proxy, message by message, with params kept raw.

A conductor routes messages it does not need to understand, so it never decodes them into
typed structs: only the envelope (`id`, `method`) is read, and `params`, `result` and
`error` stay the exact bytes the sender wrote (`msgspec.Raw`), forwarded unchanged.
Everything runs from the transport's callbacks, so messages leave in the order they came.

Per message the costly part is not the JSON but the pipes: every write wakes the process
that reads it. So the frames that one read of input produces are held per link (an
`Outbox` shared by the links of one process) and written once that read is routed: one
write per link and read, at once, with no end-of-turn callback. A message forwarded as it
came is written as the bytes it came in; an envelope is put together around the raw params.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol, cast

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from acpstack.rpc import Writer
from acpstack.transports import Transport
from acpstack.wire import FrameDecoder, FramingError, Oversized

log = logging.getLogger("acpstack.proxy")

RequestId = int | str | None


class Message(Struct):
    """A JSON-RPC message; absent members are UNSET (and left out when encoded). `jsonrpc`
    is UNSET when it is absent from a message read, and "2.0" in every message sent."""

    jsonrpc: str | UnsetType = UNSET
    id: RequestId | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class Envelope(Struct):
    """The inside of a `proxy/successor` envelope: the wrapped message, params still raw."""

    method: str
    params: Raw | UnsetType = UNSET


class Peek(Struct):
    """What routing needs of a message before anything else: the envelope's members that
    say what it is (the rest of the message is skipped, not decoded)."""

    jsonrpc: str | UnsetType = UNSET
    id: RequestId | UnsetType = UNSET
    method: str | UnsetType = UNSET


_decode = msgspec.json.Decoder(Message).decode
_peek = msgspec.json.Decoder(Peek).decode
_unwrap = msgspec.json.Decoder(Envelope).decode


def unwrap(params: Raw | UnsetType) -> Envelope | None:
    """The message a `proxy/successor` envelope carries; None when it is malformed."""
    if params is UNSET:
        return None
    try:
        return _unwrap(params)
    except msgspec.DecodeError:
        return None


_encode = msgspec.json.Encoder().encode
Reply = Callable[[Message], None]
NULL_ID: RequestId = None


def _ignore(reply: Message) -> None:
    """The reply callback of a request whose answer nobody waits for any more."""


def raw(value: Any) -> Raw:
    """`value` encoded as JSON, ready to be sent as params, a result or an error."""
    return Raw(_encode(value))


def loads(value: Raw | UnsetType) -> Any:
    """Raw JSON decoded into Python values (None when absent)."""
    return None if value is UNSET else msgspec.json.decode(value)


def error(code: int, message: str, data: Any = UNSET) -> Raw:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not UNSET:
        body["data"] = data
    return raw(body)


def envelope(
    method: str, inner_method: str, params: Raw | UnsetType, rid: RequestId | UnsetType = UNSET
) -> bytes:
    """The frame of a `method` (`proxy/successor`) message wrapping `inner_method` with
    `params` as raw bytes, without decoding or copying them twice."""
    head = b'{"jsonrpc":"2.0",'
    if rid is not UNSET:
        head += b'"id":' + _encode(rid) + b","
    head += b'"method":' + _encode(method) + b',"params":{"method":' + _encode(inner_method)
    if params is UNSET:
        return head + b"}}\n"
    return head + b',"params":' + bytes(params) + b"}}\n"


class Outbox:
    """The frames held while one read of input is routed, per link; `release` writes each
    link's frames in one write."""

    def __init__(self) -> None:
        self.holding = 0
        self.waiting: list[Link] = []

    def release(self) -> None:
        waiting, self.waiting = self.waiting, []
        for link in waiting:
            link.release()


class LinkHandler(Protocol):
    def on_request(self, link: Link, message: Message, rid: RequestId) -> None: ...

    def on_notification(self, link: Link, message: Message) -> None: ...

    def on_closed(self, link: Link, reason: str) -> None: ...


class Relaying(LinkHandler, Protocol):
    """A handler that can pass a message on as the bytes it came in (a conductor): the
    fast lane for what it only routes."""

    def pass_on(self, link: Link, line: bytes, peek: Peek) -> bool:
        """Route `line` (a request or notification from `link`, with its newline)
        unchanged, or say False (the message then goes the whole way: decoded,
        `on_request`/`on_notification`)."""
        ...

    def relay_answer(self, source: Link, rid: RequestId, line: bytes | None, text: str) -> None:
        """The answer to a request passed on from `source` as it came (same id): `line`
        as it came (with its newline), or None when the link ended first (`text` says how)."""
        ...


class Link:
    """A peer over `transport`: requests we send get their reply through a callback, the
    peer's requests and notifications go to `handler`. `name` says which peer it is in
    logs and errors. Start it with `start`, end it with `aclose`."""

    def __init__(
        self,
        transport: Transport,
        name: str,
        handler: LinkHandler,
        outbox: Outbox | None = None,
    ) -> None:
        self.transport = transport
        self.name = name
        self.handler = handler
        self.closed: bool = False
        self.close_reason: str = ""
        self._decoder = FrameDecoder(64 * 1024 * 1024, "ndjson")
        self._next_id = 0
        # Our requests in flight: their reply callbacks, or the link a request was passed
        # on from with the id it came with (`relay`: its answer goes back as it comes).
        self._pending: dict[RequestId, Reply | Link] = {}
        # A conductor passes on what it only routes (the fast lane); a proxy handles all.
        self._relaying = cast("Relaying", handler) if hasattr(handler, "pass_on") else None
        #: Where this link's peer sits in a conductor's chain (set by the conductor).
        self.position: int = 0
        #: The conductor's fast lane: method -> the link its messages from here are passed
        #: on to as they came (None: handled whole); [notifications, requests].
        self.lanes: tuple[dict[str, Link | None], dict[str, Link | None]] = ({}, {})
        self._ending: asyncio.Task[None] | None = None
        # Frames go out in order, those of one event-loop turn in one write.
        self._writer = Writer(transport, asyncio.get_running_loop())
        self._write = transport.write  # (the fast lane writes past `_writer` when it is idle)
        self._outbox = outbox if outbox is not None else Outbox()
        self._held: list[bytes] = []
        #: The frame being handled (without its newline), for forwarding it unchanged.
        self.frame: bytes = b""

    def start(self) -> None:
        self.transport.start_reading(self._data, self._eof)

    # -- sending ----------------------------------------------------------------------

    def send(self, message: Message) -> None:
        if not self.closed:
            message.jsonrpc = "2.0"
            self.send_frame(_encode(message) + b"\n")

    def send_frame(self, frame: bytes) -> None:
        """Send an encoded message (ending in a newline)."""
        if self.closed:
            return
        if self._outbox.holding:
            if not self._held:
                self._outbox.waiting.append(self)
            self._held.append(frame)
        else:
            self._writer.send(frame)

    def write_now(self, line: bytes) -> None:
        """Send `line` (ending in a newline) in the write of the read being routed, or,
        outside one, at once (after what waits): the fast lane's send."""
        if self.closed:
            return
        if self._outbox.holding:
            self.send_frame(line)
        elif self._writer.idle():
            self._write(line)
        else:
            self._writer.send(line)
            self._writer.flush()

    def release(self) -> None:
        """Write the frames held for this link now, in one write."""
        held, self._held = self._held, []
        if held and not self.closed:
            self._writer.send(b"".join(held) if len(held) > 1 else held[0])
            self._writer.flush()

    def flush(self) -> None:
        """Write what waits now."""
        self.release()
        self._writer.flush()

    def request(self, method: str, params: Raw | UnsetType, on_reply: Reply) -> int:
        """Send a request; `on_reply` gets its response (or an error made here when the
        peer leaves first). Returns the request's id on this link."""
        self._next_id += 1
        while self._next_id in self._pending:  # an id a relayed request kept
            self._next_id += 1
        rid = self._next_id
        if self.closed:
            on_reply(Message(id=rid, error=error(-32603, f"{self.name} is gone")))
            return rid
        self._pending[rid] = on_reply
        self.send(Message(id=rid, method=method, params=params))
        return rid

    async def call(self, method: str, params: Raw | UnsetType) -> Message:
        """Send a request and wait for its response message."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

        def settle(reply: Message) -> None:
            if not future.done():
                future.set_result(reply)

        rid = self.request(method, params, settle)
        try:
            return await future
        except asyncio.CancelledError:
            self.forget(rid)
            raise

    def relay(self, frame: bytes, rid: RequestId, source: Link) -> bool:
        """Send `frame`, a request from `source`, as it came (with its id `rid`); its
        answer goes to `source`'s handler (`relay_answer`). False when that id is in use
        here (or the link is closed): the request must then be sent with an id of ours."""
        if self.closed or rid in self._pending:
            return False
        self._pending[rid] = source
        self.write_now(frame)
        return True

    def forget(self, rid: RequestId) -> None:
        """Drop the callback of a request of ours: its late answer is ignored. The id
        stays taken until that answer comes (a request relayed with the same id meanwhile
        would get it), so the peer never has two requests in flight under one id."""
        if rid in self._pending:
            self._pending[rid] = _ignore

    def notify(self, method: str, params: Raw | UnsetType) -> None:
        self.send(Message(method=method, params=params))

    def answer(self, rid: RequestId, reply: Message) -> None:
        """Answer the peer's request `rid` with the result or error of `reply`."""
        if reply.error is not UNSET:
            self.send(Message(id=rid, error=reply.error))
        else:
            self.send(
                Message(id=rid, result=reply.result if reply.result is not UNSET else Raw(b"null"))
            )

    def fail(self, rid: RequestId, code: int, text: str) -> None:
        self.send(Message(id=rid, error=error(code, text)))

    # -- receiving --------------------------------------------------------------------

    def _data(self, data: bytes) -> None:
        if self._decoder.whole_line(data):  # the common read: one whole message
            # A conductor's fast lane for it: passed on as it came and written at once,
            # with no frame split off or held; otherwise the usual way.
            if self._relaying is not None and not self._outbox.holding and self._passed(data):
                return
            self._route([data[:-1]])
        else:
            self._route(self._decoder.feed(data))

    def _passed(self, line: bytes) -> bool:
        """Whether the conductor passed on `line` (one message with its newline) as it
        came: a routed request or notification, or the answer to a request passed on so.
        False for anything else, unreadable lines included (refused the usual way)."""
        try:
            peek = _peek(line)  # (the newline is JSON whitespace)
        except msgspec.DecodeError:
            return False
        if peek.jsonrpc != "2.0":
            return False
        relaying = self._relaying
        assert relaying is not None
        if peek.method is not UNSET:
            return relaying.pass_on(self, line, peek)
        if peek.id is not UNSET:
            waiting = self._pending.get(peek.id)
            if type(waiting) is Link:
                del self._pending[peek.id]
                relaying.relay_answer(waiting, peek.id, line, "")
                return True
        return False

    def _route(self, frames: list[bytes | Oversized | FramingError]) -> None:
        """Handle `frames`; what they send leaves afterwards, one write per link."""
        outbox = self._outbox
        outbox.holding += 1
        try:
            for frame in frames:
                self._frame(frame)
        finally:
            outbox.holding -= 1
            if not outbox.holding:
                outbox.release()

    def _frame(self, frame: bytes | Oversized | FramingError) -> None:
        if not isinstance(frame, bytes):
            log.warning("%s: dropped an unreadable message (%s)", self.name, type(frame).__name__)
            return
        if not frame.strip():
            return
        if self._relaying is not None and self._passed(frame + b"\n"):
            return
        try:
            message = _decode(frame)
            self.frame = frame
        except msgspec.DecodeError as exc:
            self._refuse(frame, str(exc))
            return
        if message.jsonrpc != "2.0":
            log.warning("%s sent a message without jsonrpc 2.0", self.name)
            if message.method is not UNSET and message.id is not UNSET:
                self.send(Message(id=message.id, error=error(-32600, 'jsonrpc must be "2.0"')))
            return
        if message.method is UNSET:
            if message.id is UNSET:
                self.send(
                    Message(id=NULL_ID, error=error(-32600, "neither a request nor a response"))
                )
                return
            on_reply = self._pending.pop(message.id, None)
            if isinstance(on_reply, Link):
                assert self._relaying is not None
                self._relaying.relay_answer(on_reply, message.id, self.frame + b"\n", "")
            elif on_reply is not None:
                on_reply(message)
        elif message.id is UNSET:
            self.handler.on_notification(self, message)
        else:
            self.handler.on_request(self, message, message.id)

    def _refuse(self, frame: bytes, problem: str) -> None:
        """Answer a line that is not a JSON-RPC message: -32700 when it is not JSON, -32600
        when it is JSON of another shape (both with id null)."""
        log.warning("%s sent a line that is not a JSON-RPC message: %s", self.name, problem)
        try:
            msgspec.json.decode(frame)
        except msgspec.DecodeError:
            code, text = -32700, "Parse error"
        else:
            code, text = -32600, "Invalid Request"
        self.send(Message(id=NULL_ID, error=error(code, f"{text}: {problem}")))

    def _eof(self) -> None:
        self._route(self._decoder.feed_eof())
        if self._ending is None:
            self._ending = asyncio.get_running_loop().create_task(self._ended())

    async def _ended(self) -> None:
        with contextlib.suppress(Exception):
            await self.transport.settle()
        reason = self.transport.close_reason() or f"{self.name} closed its output"
        self._close(reason.split("; last stderr lines")[0])

    def _close(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        pending, self._pending = self._pending, {}
        self.handler.on_closed(self, reason)  # first: it may answer for the whole chain
        text = f"{self.name} ended: {reason}"
        for rid, on_reply in pending.items():
            if isinstance(on_reply, Link):
                assert self._relaying is not None
                self._relaying.relay_answer(on_reply, rid, None, text)
            else:
                on_reply(Message(id=rid, error=error(-32603, text)))

    async def aclose(self) -> None:
        """Close the transport (which ends a subprocess) and fail what is pending."""
        self.flush()
        self._close("closed")
        await self.transport.close()
