"""What uvicorn's httptools protocol lacks against hostile clients, added in a subclass:

- a limit on the request line and headers (431 past `max_header_bytes`; httptools has
  none, so one client streaming an endless header froze the server);
- a deadline for them (408 after `header_timeout`: uvicorn arms no timer before the
  first request, so slowloris connections were held forever);
- a cap on connections that have not yet passed the token check (`max_untrusted_connections`):
  past it, the oldest of them is answered 503 and closed, so idle sockets cannot use up
  the process's file descriptors, and a newcomer (an editor reconnecting) still gets in.
  Connections younger than `untrusted_grace` are not refused below twice the cap (a
  failover's burst connects all at once, before any request is read), and a connection
  that sent a whole request head no longer counts (a refused one is closed by its answer).

A request that passed the token check marks its connection trusted through
`scope["extensions"]["acpstack.trust"]` (see `trust`). Body deadlines, `Connection: close`
after a refusal and the size limit of a body are the application's (`_asgi.read_body`).

The subclass also reads the socket 64 KiB at a time (`acpstack._reads`), and closes a
connection whose request was not read to its end with a lingering close (`_linger`), so
that the client gets the answer that refused it rather than a reset.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from acpstack._reads import read_in_heap_sized_chunks
from acpstack.server._asgi import Scope
from acpstack.server._limits import ServerLimits
from acpstack.server._linger import LingeringTransport

log = logging.getLogger("acpstack.server")

TRUST_EXTENSION = "acpstack.trust"


class GuardCounters:
    """The server-wide counts the guard keeps (read by `/metrics` and the tests)."""

    def __init__(self) -> None:
        # the untrusted connections, oldest first (a dict keeps insertion order)
        self.waiting: dict[Any, None] = {}
        self.evicted = 0
        self.header_too_large = 0
        self.header_timeouts = 0


def trust(scope: Scope) -> None:
    """Mark the request's connection as past the token check (no-op on other servers)."""
    mark: Callable[[], None] | None = scope.get("extensions", {}).get(TRUST_EXTENSION)
    if mark is not None:
        mark()


def _plain(status: bytes, text: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(text)).encode() + b"\r\nconnection: close\r\n\r\n" + text
    )


class HeaderTimer:
    """The deadline for a request's headers: `on_late` runs when it passes unless it is
    cancelled (or armed again, for the next request on a kept-alive connection)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float, on_late: Any) -> None:
        self._loop, self._timeout, self._on_late = loop, timeout, on_late
        self._handle: asyncio.TimerHandle | None = None

    @property
    def armed(self) -> bool:
        return self._handle is not None

    def arm(self) -> None:
        self.cancel()
        self._handle = self._loop.call_later(self._timeout, self._late)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _late(self) -> None:
        self._handle = None
        self._on_late()


def refuse(protocol: Any, status: bytes, text: bytes) -> None:
    """Answer `status` with `text` (unless an answer is under way) and close."""
    if protocol.transport.is_closing():
        return
    if protocol.cycle is None or protocol.cycle.response_complete:  # not mid-answer
        protocol.transport.write(_plain(status, text))
    protocol.transport.close()


def request_unread(protocol: Any) -> bool:
    """Whether the request in progress has more to come than was read."""
    if protocol._reading_headers:
        return bool(protocol._header_bytes > 0)
    cycle = protocol.cycle
    return cycle is not None and cycle.more_body and not cycle.disconnected


def _make_room(counters: GuardCounters, limits: ServerLimits, now: float) -> None:
    """Past the cap, refuse the oldest untrusted connections (503, closed at once) - but
    not, below twice the cap, those younger than the grace: a burst of new ones."""
    cap = limits.max_untrusted_connections
    while len(counters.waiting) > cap:
        oldest = next(iter(counters.waiting))
        if now - oldest._arrived < limits.untrusted_grace and len(counters.waiting) <= 2 * cap:
            return  # a burst: the oldest is new too (and all after it are newer)
        counters.evicted += 1
        oldest._trust()
        # at once, lingering or not: this is about freeing its file descriptor
        oldest._refuse(b"503 Service Unavailable", b"too many connections\n")
        oldest._linger.close_now()


def guarded_protocol(base: Any, limits: ServerLimits, counters: GuardCounters) -> Any:
    """A subclass of uvicorn's `HttpToolsProtocol` (`base`) that enforces `limits`."""

    class GuardedHttpProtocol(base):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.Transport) -> None:
            read_in_heap_sized_chunks(transport)  # also after an upgrade to WebSocket
            self._linger = LingeringTransport(transport, lambda: request_unread(self))
            super().connection_made(self._linger)
            self._header_bytes = 0
            self._reading_headers = True
            self._header_timer = HeaderTimer(self.loop, limits.header_timeout, self._header_late)
            self._arrived = self.loop.time()
            counters.waiting[self] = None
            _make_room(counters, limits, self._arrived)
            self._header_timer.arm()

        def _header_late(self) -> None:
            if self._reading_headers and not self.transport.is_closing():
                counters.header_timeouts += 1
                self._refuse(b"408 Request Timeout", b"the request's headers came too slowly\n")

        def _refuse(self, status: bytes, text: bytes) -> None:
            self._reading_headers = False
            self._header_timer.cancel()
            refuse(self, status, text)

        def _trust(self) -> None:
            counters.waiting.pop(self, None)

        def data_received(self, data: bytes) -> None:
            if self.transport.is_closing():
                if self._linger.lingering:  # refused: what the client still sends is dropped
                    self._linger.discard(data)
                return
            if self._reading_headers:
                self._header_bytes += len(data)
            super().data_received(data)
            if not self._reading_headers or self.transport.is_closing():
                return
            if self._header_bytes > limits.max_header_bytes:
                counters.header_too_large += 1
                self._refuse(b"431 Request Header Fields Too Large", b"headers too large\n")
            elif not self._header_timer.armed:
                # a head that did not come whole in one read (one that did, as nearly
                # every request on a kept-alive connection does, costs no timer)
                self._header_timer.arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if not self._reading_headers:  # the next request on a kept-alive connection
                self._reading_headers = True
                self._header_bytes = 0

        def on_headers_complete(self) -> None:
            self._reading_headers = False
            self._header_timer.cancel()
            # A whole request head is not an idle socket: it no longer counts against the
            # cap (a failover's burst of requests arrives together, before the application
            # has checked any of them); a refused one is closed by the answer.
            self._trust()
            self.scope["extensions"] = {TRUST_EXTENSION: self._trust}
            super().on_headers_complete()

        def handle_websocket_upgrade(self) -> None:
            # the socket now belongs to the WebSocket protocol, whose handshake the
            # application answers at once: it no longer counts here
            self._header_timer.cancel()
            self._trust()
            # the WebSocket protocol gets the socket's own transport (its close handshake
            # needs no linger, and its writes no detour)
            self.transport = self._linger.transport
            super().handle_websocket_upgrade()

        def connection_lost(self, exc: Exception | None) -> None:
            self._header_timer.cancel()
            self._linger.cancel_timer()
            self._trust()
            super().connection_lost(exc)

    return GuardedHttpProtocol
