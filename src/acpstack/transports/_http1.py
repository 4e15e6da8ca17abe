"""A small HTTP/1.1 client for remote ACP: h11 (the sans-IO protocol library) over asyncio
streams. Keep-alive connections carry the POSTs (one request at a time each: the HTTP
client keeps a few, for sessions sending at once) and each SSE stream has a connection
of its own. About 20 times cheaper per request than a
general-purpose client here, which is most of a remote round trip. No proxies, no HTTP/2.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from acpstack._reads import read_in_heap_sized_chunks
from acpstack.transports._extras import require_extra

READ_SIZE = 256 * 1024
Headers = Sequence[tuple[str, str]]


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


class Http1Connection:
    """One HTTP/1.1 connection, opened on first use and again after the server closed it."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float, max_event_size: int) -> None:
        self._h11: Any = require_extra("h11")
        self.endpoint = endpoint
        self._connect_timeout = connect_timeout
        self._max_event_size = max_event_size
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._conn: Any = None

    async def _open(self) -> None:
        e = self.endpoint
        async with asyncio.timeout(self._connect_timeout):
            self._reader, self._writer = await asyncio.open_connection(
                e.host,
                e.port,
                ssl=e.ssl,
                server_hostname=e.host if e.ssl else None,
                limit=READ_SIZE,
            )
        read_in_heap_sized_chunks(self._writer.transport)
        self._conn = self._h11.Connection(
            self._h11.CLIENT, max_incomplete_event_size=self._max_event_size
        )

    def _usable(self) -> bool:
        return (
            self._writer is not None
            and self._reader is not None
            and not self._reader.at_eof()
            and not self._writer.is_closing()
            and self._conn.our_state is self._h11.IDLE
        )

    async def send(
        self, method: str, headers: Headers, body: bytes = b"", *, resent: Headers = ()
    ) -> Response:
        """A whole request and its whole response (opening the connection again when the
        server had closed it while idle). A request sent again that way carries `resent`
        too (the server may have read the first one: it can tell)."""
        for attempt in range(2):
            if attempt:
                headers = [*headers, *resent]
            reused = self._usable()
            if not reused:
                await self.aclose()
                await self._open()
            try:
                await self._write_request(method, headers, body)
                response = await self._read_head()
            except (ConnectionError, self._h11.RemoteProtocolError):
                await self.aclose()
                if not reused:
                    raise
                continue  # the server closed a kept-alive connection before reading our request
            response.body = b"".join([chunk async for chunk in self._body()])
            self._finish_cycle()
            return response
        raise AssertionError("unreachable")

    async def open_stream(self, method: str, headers: Headers) -> Response:
        """Send a request and read the response head; then iterate `body()` (e.g. SSE)."""
        await self._open()
        await self._write_request(method, headers, b"")
        return await self._read_head()

    async def _write_request(self, method: str, headers: Headers, body: bytes) -> None:
        h11 = self._h11
        e = self.endpoint
        all_headers = [("Host", e.host_header), *headers]
        if body or method in ("POST", "PUT"):
            all_headers.append(("Content-Length", str(len(body))))
        data = self._conn.send(h11.Request(method=method, target=e.target, headers=all_headers))
        if body:
            data += self._conn.send(h11.Data(data=body))
        data += self._conn.send(h11.EndOfMessage())
        assert self._writer is not None
        self._writer.write(data)
        await self._writer.drain()

    async def _next_event(self) -> Any:
        h11 = self._h11
        while True:
            event = self._conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            assert self._reader is not None
            self._conn.receive_data(await self._reader.read(READ_SIZE))

    async def _read_head(self) -> Response:
        while True:
            event = await self._next_event()
            if isinstance(event, self._h11.Response):
                headers = [
                    (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers
                ]
                return Response(event.status_code, event.reason.decode("latin-1"), headers)
            if isinstance(event, self._h11.ConnectionClosed):
                raise ConnectionResetError("the server closed the connection without answering")
            # an informational (1xx) response: keep reading

    async def _body(self) -> AsyncIterator[bytes]:
        h11 = self._h11
        while True:
            event = await self._next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    def body(self) -> AsyncIterator[bytes]:
        return self._body()

    def _finish_cycle(self) -> None:
        h11 = self._h11
        if self._conn.our_state is h11.DONE and self._conn.their_state is h11.DONE:
            self._conn.start_next_cycle()
        else:
            writer, self._writer, self._reader = self._writer, None, None
            if writer is not None:
                writer.close()

    async def aclose(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1)
