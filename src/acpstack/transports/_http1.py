"""A small HTTP/1.1 client for remote ACP: httptools (llhttp, the parser uvicorn serves
with) under an asyncio protocol. Keep-alive connections carry the POSTs (one request at a
time each: the HTTP client keeps a few, for sessions sending at once) and each SSE stream
has a connection of its own. No proxies, no HTTP/2.

Why not a general-purpose client: one cost ~0.8 ms per POST here, most of a remote round
trip. Why not h11 over asyncio streams (what this was until 2026-11-29): parsing in pure
Python and a stream reader between the socket and the parser cost the client ~245 µs of
CPU per W8 round trip; the protocol feeds each read to the parser straight from the
transport's callback and wakes the waiting request once per response.
"""

from __future__ import annotations

import asyncio
import collections
import re
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from acpstack._reads import read_in_heap_sized_chunks
from acpstack.transports._extras import require_extra

Headers = Sequence[tuple[str, str]]
# A stream's body held unread past this pauses reading the socket (the server waits).
BODY_HIGH_WATER = 1024 * 1024
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")


class HttpError(ConnectionError):
    """The server's reply broke HTTP/1.1 (or a limit): the connection is not usable."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    host: str
    port: int
    target: str  # path and query
    host_header: str
    ssl: ssl.SSLContext | None


def endpoint(url: str, verify: bool | str | ssl.SSLContext = True) -> Endpoint:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s):// URL: {url!r}")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    context: ssl.SSLContext | None = None
    if secure:
        if isinstance(verify, ssl.SSLContext):
            context = verify
        elif verify is False:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default_port = port == (443 if secure else 80)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return Endpoint(
        url, parts.hostname, port, target, host if default_port else f"{host}:{port}", context
    )


@dataclass
class Response:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes = b""

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k == name), None)

    def header_list(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self.headers if k == name]


def request_head(method: str, e: Endpoint, headers: Headers, body_length: int | None) -> bytes:
    """The request line and headers. Raises ValueError for a header that could split the
    request (a name that is not a token, a value with CR, LF or NUL)."""
    lines = [f"{method} {e.target} HTTP/1.1\r\nHost: {e.host_header}\r\n"]
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise ValueError(f"invalid HTTP header {name!r}")
        lines.append(f"{name}: {value}\r\n")
    if body_length is not None:
        lines.append(f"Content-Length: {body_length}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("latin-1")


class _Exchange(asyncio.Protocol):
    """One TCP connection: writes requests, parses responses as the bytes come (httptools
    callbacks), and hands the current response's head and body to whoever waits."""

    def __init__(self, max_head_size: int) -> None:
        self._parser: Any = require_extra("httptools").HttpResponseParser(self)
        self._parse_error: tuple[type[Exception], ...] = (
            require_extra("httptools").HttpParserError,
        )
        self._max_head_size = max_head_size
        self.transport: asyncio.Transport | None = None
        self.idle = True  # no response expected: a request may be written
        self.reusable = True  # the server keeps the connection open after this response
        self._head_size = 0  # bytes read while the head is incomplete
        self._header_size = 0  # bytes of the head's headers
        self._reason = b""
        self._headers: list[tuple[str, str]] = []
        self._head: Response | None = None
        self._length_known = False  # Content-Length or chunked: else the body ends at EOF
        self._informational = False
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._complete = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False  # reading paused: too much body unread
        self._held = False  # reading paused: the reader asked (`hold`)
        self._reading = True  # the transport reads the socket
        self._write_paused: asyncio.Future[None] | None = None
        # A stream's reader: each piece of the body goes to it as it is parsed, with no
        # task woken in between (`pump`).
        self._sink: Callable[[bytes], None] | None = None
        self._sink_error: Exception | None = None

    # -- the transport's side --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is not a subclass)
        read_in_heap_sized_chunks(transport)

    def data_received(self, data: bytes) -> None:
        if self._error is not None:
            return
        if self.idle:
            self._fail(HttpError("the server sent bytes no request asked for"))
            return
        if self._head is None:
            self._head_size += len(data)
        try:
            self._parser.feed_data(data)
        except self._parse_error as exc:
            cause = exc.__context__ if isinstance(exc.__context__, HttpError) else exc
            self._fail(cause if isinstance(cause, HttpError) else HttpError(f"bad reply: {exc}"))
            return
        if self._head is None and self._head_size > self._max_head_size:
            self._fail(HttpError(f"a reply's head is over {self._max_head_size} bytes"))

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        if self._write_paused is not None and not self._write_paused.done():
            self._write_paused.set_result(None)
        if self.idle or self._complete or self._error is not None:
            return
        if self._head is not None and not self._length_known:
            self.on_message_complete()  # a body delimited by the end of the connection
            return
        why = "the server closed the connection without answering"
        if self._head is not None:
            why = "the server closed the connection in the middle of a reply"
        self._fail(ConnectionResetError(why) if exc is None else exc)

    def pause_writing(self) -> None:
        self._write_paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._write_paused is not None and not self._write_paused.done():
            self._write_paused.set_result(None)
        self._write_paused = None

    # -- httptools' callbacks --------------------------------------------------------------

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_size += len(name) + len(value)
        if self._header_size > self._max_head_size:
            raise HttpError(f"a reply's head is over {self._max_head_size} bytes")
        self._headers.append((name.decode("latin-1").lower(), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        headers, self._headers = self._headers, []
        reason, self._reason = self._reason.decode("latin-1"), b""
        if 100 <= status < 200:  # informational: the real reply follows
            self._informational = True
            return
        self._length_known = any(
            k == "content-length" or k == "transfer-encoding" for k, _ in headers
        ) or status in (204, 304)
        self._head = Response(status, reason, headers)
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self._sink is not None:
            if self._sink_error is None:
                try:
                    self._sink(body)
                except Exception as exc:  # the reader's: `pump` raises it
                    self._sink_error = exc
                    self._fail(exc)
            return
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > BODY_HIGH_WATER and not self._paused:
            self._paused = True
            self._set_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        self._complete = True
        self.reusable = self.reusable and self._parser.should_keep_alive()
        self._wake()

    # -- the request's side ----------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Bytes of the body received and not yet read."""
        return self._buffered

    @property
    def answering(self) -> bool:
        """The head of the current request's response arrived."""
        return self._head is not None

    def start(self, data: bytes) -> None:
        """Write a request (the connection is idle)."""
        assert self.transport is not None and self.idle
        self.idle = False
        self._head, self._complete, self._head_size, self._header_size = None, False, 0, 0
        self.transport.write(data)

    async def sent(self) -> None:
        """Wait while the transport holds too much of what we wrote."""
        if self._write_paused is not None:
            await self._write_paused

    async def head(self) -> Response:
        while self._head is None:
            await self._wait()
        return self._head

    async def body(self) -> AsyncIterator[bytes]:
        """The current response's body, chunk by chunk as it arrives."""
        while True:
            while self._chunks:
                yield self._take()
            if self._complete:
                return
            await self._wait()

    async def pump(self, sink: Callable[[bytes], None]) -> None:
        """Hand the current response's body to `sink` piece by piece, from the transport's
        callback, until it ends; raises what broke it (or what `sink` raised)."""
        while self._chunks:
            sink(self._take())
        self._sink = sink  # from now on nothing is held: on_body hands each piece over
        while not self._complete:
            await self._wait()

    def _take(self) -> bytes:
        """The oldest piece of body held; reading resumes once half the limit is left."""
        chunk = self._chunks.popleft()
        self._buffered -= len(chunk)
        if self._paused and self._buffered <= BODY_HIGH_WATER // 2:
            self._paused = False
            self._set_reading()
        return chunk

    def hold(self, held: bool) -> None:
        """Pause (True) or resume (False) reading the socket for the reader."""
        self._held = held
        self._set_reading()

    def _set_reading(self) -> None:
        transport = self.transport
        reading = not (self._held or self._paused)
        if transport is None or transport.is_closing() or reading == self._reading:
            return
        self._reading = reading
        if reading:
            transport.resume_reading()
        else:
            transport.pause_reading()

    def finish(self) -> bool:
        """The response was read whole: the connection may carry the next request."""
        if self._complete and self.reusable and self._error is None:
            self.idle = True
            return True
        return False

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self._error is not None:
            raise self._error

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        self._error = error
        self.reusable = False
        if self.transport is not None:
            self.transport.close()
        self._wake()


class Http1Connection:
    """One HTTP/1.1 connection, opened on first use and again after the server closed it."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float, max_event_size: int) -> None:
        self.endpoint = endpoint
        self._connect_timeout = connect_timeout
        self._max_event_size = max_event_size
        self._exchange: _Exchange | None = None

    async def _open(self) -> _Exchange:
        e = self.endpoint
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self._connect_timeout):
            _, exchange = await loop.create_connection(
                lambda: _Exchange(self._max_event_size),
                e.host,
                e.port,
                ssl=e.ssl,
                server_hostname=e.host if e.ssl else None,
            )
        self._exchange = exchange
        return exchange

    def _usable(self) -> _Exchange | None:
        exchange = self._exchange
        if (
            exchange is not None
            and exchange.idle
            and exchange.reusable
            and exchange.transport is not None
            and not exchange.transport.is_closing()
        ):
            return exchange
        return None

    async def send(
        self, method: str, headers: Headers, body: bytes = b"", *, resent: Headers = ()
    ) -> Response:
        """A whole request and its whole response (opening the connection again when the
        server had closed it while idle). A request sent again that way carries `resent`
        too (the server may have read the first one: it can tell)."""
        length = len(body) if body or method in ("POST", "PUT") else None
        for attempt in range(2):
            if attempt:
                headers = [*headers, *resent]
            data = request_head(method, self.endpoint, headers, length) + body
            exchange = self._usable()
            reused = exchange is not None
            if exchange is None:
                await self.aclose()
                exchange = await self._open()
            try:
                exchange.start(data)
                await exchange.sent()
                response = await exchange.head()
                chunks = [chunk async for chunk in exchange.body()]
            except ConnectionError:
                await self.aclose()
                if not reused or exchange.answering:
                    raise
                continue  # the server closed a kept-alive connection before reading our request
            response.body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            if not exchange.finish():
                await self.aclose()
            return response
        raise AssertionError("unreachable")

    async def open_stream(self, method: str, headers: Headers) -> Response:
        """Send a request and read the response head; then iterate `body()` (e.g. SSE)."""
        await self.aclose()
        exchange = await self._open()
        exchange.start(request_head(method, self.endpoint, headers, None))
        return await exchange.head()

    def body(self) -> AsyncIterator[bytes]:
        """The body of the response `open_stream` opened."""
        assert self._exchange is not None
        return self._exchange.body()

    async def pump(self, sink: Callable[[bytes], None]) -> None:
        """Give the body of the response `open_stream` opened to `sink` as it arrives (no
        task switch per read), until it ends; raises what broke it or what `sink` raised."""
        assert self._exchange is not None
        await self._exchange.pump(sink)

    def hold(self, held: bool) -> None:
        """Stop (True) or restart (False) reading the stream's socket: the server's writes
        wait in TCP meanwhile."""
        if self._exchange is not None:
            self._exchange.hold(held)

    async def aclose(self) -> None:
        exchange, self._exchange = self._exchange, None
        if exchange is not None and exchange.transport is not None:
            exchange.transport.close()
