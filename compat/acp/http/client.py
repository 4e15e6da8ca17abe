"""`create_http_stream`: a message `Transport` to a remote agent over streamable HTTP.

Without `client`, acpstack's `HttpClientTransport` carries it (keep-alive POSTs, the
connection's and each session's SSE stream, resume of a broken stream, cookies, size
limit). Code that passes its own `httpx.AsyncClient` (for its proxies, auth or a mock
transport) gets the same exchange made with that client: `_HttpxStream` below, which
follows the RFD's rules without acpstack's resume logic.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from acp._messages import _EOF, ByteTransportMessages, next_message
from acp._sse import parse_sse_stream
from acp.http.protocol import (
    CONNECTION_ID_HEADER,
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    SESSION_ID_HEADER,
    is_initialize_request,
    method_requires_session_header,
    session_id_from_message,
)
from acpstack.transports import HttpClientTransport

if TYPE_CHECKING:
    import httpx

    from acp._transport import Transport

__all__ = ["AcpHttpStatusError", "create_http_stream"]


class AcpHttpStatusError(RuntimeError):
    """An HTTP exchange answered with a status the transport cannot go on from."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code


class _HttpxStream:
    """The streamable HTTP exchange made with a caller's `httpx.AsyncClient`."""

    def __init__(self, url: str, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self._url = url
        self._client = client
        self._headers = headers
        self._connection_id: str | None = None
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._readers: set[asyncio.Task[None]] = set()
        self._sessions: set[str] = set()  # sessions whose stream is open
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("Transport closed")
        if is_initialize_request(message):
            await self._initialize(message)
            return
        if self._connection_id is None:
            raise ConnectionError("initialize must be sent first (no connection yet)")
        headers = {CONNECTION_ID_HEADER: self._connection_id, **self._headers}
        method = message.get("method")
        session_id = session_id_from_message(message)
        if session_id is not None and method_requires_session_header(method):
            headers[SESSION_ID_HEADER] = session_id
        response = await self._client.post(self._url, json=message, headers=headers)
        if response.status_code not in (200, 202):
            raise AcpHttpStatusError(response.status_code, f"POST {method or 'answer'} refused")
        if response.status_code == 200 and response.content:
            with contextlib.suppress(ValueError):
                self._inbox.put_nowait(response.json())

    async def _initialize(self, message: dict[str, Any]) -> None:
        response = await self._client.post(self._url, json=message, headers=self._headers)
        if response.status_code != 200:
            raise AcpHttpStatusError(response.status_code, "initialize refused")
        connection_id = response.headers.get(CONNECTION_ID_HEADER)
        if not connection_id:
            raise AcpHttpStatusError(200, f"the answer to initialize has no {CONNECTION_ID_HEADER}")
        self._connection_id = connection_id
        self._inbox.put_nowait(response.json())
        self._read(None)

    def _read(self, session_id: str | None) -> None:
        if session_id is not None:
            self._sessions.add(session_id)
        reader = asyncio.ensure_future(self._read_stream(session_id))
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)

    async def _read_stream(self, session_id: str | None) -> None:
        import httpx

        headers = {"Accept": CONTENT_TYPE_SSE, CONNECTION_ID_HEADER: str(self._connection_id)}
        if session_id is not None:
            headers[SESSION_ID_HEADER] = session_id
        try:
            async with self._client.stream(
                "GET", self._url, headers={**headers, **self._headers}
            ) as response:
                if response.status_code == 200:
                    async for message in parse_sse_stream(response.aiter_bytes()):
                        found = session_id_from_message(message)
                        if found is not None and found not in self._sessions:
                            self._read(found)  # a new session: open its stream
                        self._inbox.put_nowait(message)
        except httpx.HTTPError:
            pass
        finally:
            if session_id is not None:
                self._sessions.discard(session_id)
            elif not self._closed:
                self._inbox.put_nowait(_EOF)  # the connection's stream ended: so did we

    async def receive(self) -> dict[str, Any] | None:
        return await next_message(self._inbox)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for reader in list(self._readers):
            reader.cancel()
        for reader in list(self._readers):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        if self._connection_id is not None:
            with contextlib.suppress(Exception):
                await self._client.request(
                    "DELETE",
                    self._url,
                    headers={CONNECTION_ID_HEADER: self._connection_id, **self._headers},
                )
        self._inbox.put_nowait(_EOF)


def create_http_stream(
    url: str,
    *,
    client: httpx.AsyncClient | None = None,
    headers: dict[str, str] | None = None,
) -> Transport:
    """A `Transport` to the agent at `url` (http:// or https://), for `acp.connect_to_agent`.
    `headers` go with every request. The first message sent must be `initialize`."""
    if client is None:
        return ByteTransportMessages(HttpClientTransport(url, headers=headers))
    return _HttpxStream(url, client, {"Content-Type": CONTENT_TYPE_JSON, **(headers or {})})
