"""The HTTP/1.1 client under the HTTP transport, against a bare asyncio server on 127.0.0.1:
keep-alive reuse, a kept-alive connection the server closed, chunked bodies, bad replies."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from acpstack.transports import HttpClientTransport
from acpstack.transports._http1 import (
    BODY_HIGH_WATER,
    Http1Connection,
    HttpError,
    endpoint,
    request_head,
)

pytestmark = pytest.mark.timeout(20)
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], object]


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, list[int]]]:
    """Answers each request 202 (chunked, two chunks); after `request.param` requests on one
    connection it closes that connection without saying so."""
    per_connection: int = request.param
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(0)
        while connections[-1] < per_connection:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            await reader.readexactly(length)
            connections[-1] += 1
            writer.write(
                b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\n\r\n2\r\nok\r\n1\r\n!\r\n0\r\n\r\n"
            )
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield f"http://127.0.0.1:{port}/acp", connections


@pytest.mark.parametrize("server", [100], indirect=True)
async def test_requests_reuse_one_connection(server: tuple[str, list[int]]) -> None:
    url, connections = server
    conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
    for _ in range(5):
        response = await conn.send("POST", [("Content-Type", "application/json")], b"{}")
        assert (response.status, response.body, response.header("set-cookie")) == (
            202,
            b"ok!",
            "a=1",
        )
    assert connections == [5]
    await conn.aclose()


@pytest.mark.parametrize("server", [1], indirect=True)
async def test_a_connection_the_server_closed_is_opened_again(
    server: tuple[str, list[int]],
) -> None:
    url, connections = server
    conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
    for _ in range(3):
        assert (await conn.send("POST", [], b"{}")).status == 202
    assert connections == [1, 1, 1]
    await conn.aclose()


async def test_a_reply_that_is_not_http_is_an_error() -> None:
    async with serving(answering(b"SSH-2.0-OpenSSH\r\n\r\n")) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        with pytest.raises(HttpError):
            await conn.send("POST", [], b"{}")
        await conn.aclose()


def test_endpoints() -> None:
    e = endpoint("https://agent.example/acp?x=1")
    assert (e.host, e.port, e.target, e.host_header, e.ssl is not None) == (
        "agent.example",
        443,
        "/acp?x=1",
        "agent.example",
        True,
    )
    assert endpoint("http://[::1]:8765/acp").host_header == "[::1]:8765"
    with pytest.raises(ValueError):
        endpoint("ws://x/acp")


@contextlib.asynccontextmanager
async def serving(handle: Handler) -> AsyncIterator[str]:
    """A server on 127.0.0.1 running `handle` per connection; on the way out it waits for
    every handler to end (the client closed first) and closes their sockets."""
    handlers: list[asyncio.Task[object]] = []

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await handle(reader, writer)  # type: ignore[misc]
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    srv = await asyncio.start_server(run, "127.0.0.1", 0)
    async with srv:
        yield f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/acp"
        await asyncio.wait_for(asyncio.gather(*handlers, return_exceptions=True), 10)


def answering(reply: bytes, *, then_close: bool = True) -> Handler:
    """A handler that answers every request on its connection with `reply` (or only the
    first, then closes)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(reply)
            await writer.drain()
            if then_close:
                return

    return handle


async def test_a_head_over_the_limit_is_an_error_and_not_kept() -> None:
    huge = b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * 8000 + b"\r\nContent-Length: 0\r\n\r\n"
    async with serving(answering(huge)) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        with pytest.raises(HttpError, match="over 1024 bytes"):
            await conn.send("GET", [])
        await conn.aclose()


async def test_a_reply_cut_in_the_middle_is_an_error_and_the_next_request_reconnects() -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"
    async with serving(answering(cut)) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        for _ in range(2):  # the second request opens a new connection, fails the same way
            with pytest.raises(ConnectionResetError, match="middle of a reply"):
                await conn.send("POST", [], b"{}")
        await conn.aclose()


async def test_a_body_without_a_length_ends_with_the_connection() -> None:
    async with serving(answering(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it")) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        for _ in range(2):
            response = await conn.send("GET", [])
            assert (response.status, response.body) == (200, b"all of it")
        await conn.aclose()


async def test_an_informational_reply_is_skipped() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
    async with serving(answering(reply, then_close=False)) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        for _ in range(3):
            response = await conn.send("POST", [], b"{}")
            assert (response.status, response.reason, response.body) == (201, "Created", b"ok")
        await conn.aclose()


async def test_a_request_that_timed_out_leaves_the_next_one_a_fresh_connection() -> None:
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        await reader.readuntil(b"\r\n\r\n")
        if len(connections) > 1:  # the first connection never gets an answer
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        await reader.read()  # until the client closes

    async with serving(handle) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await conn.send("GET", [])
        assert (await conn.send("GET", [])).body == b"ok"
        assert len(connections) == 2
        await conn.aclose()


def test_headers_that_could_split_a_request_are_refused() -> None:
    e = endpoint("http://127.0.0.1:1/acp")
    for bad in [("X-A", "1\r\nX-B: 2"), ("X A", "1"), ("X-A", "1\n"), ("X-A", "\x00")]:
        with pytest.raises(ValueError, match="invalid HTTP header"):
            request_head("GET", e, [bad], None)
    assert request_head("POST", e, [("X-A", "1")], 2) == (
        b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n"
    )


async def test_a_stream_nobody_reads_stops_reading_the_socket_and_loses_nothing() -> None:
    chunk = bytes(range(256)) * 256  # 64 KiB
    count = 128  # 8 MiB: far more than the 1 MiB held before reading pauses

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(count):
            writer.write(b"10000\r\n" + chunk + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async with serving(handle) as url:
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        assert (await conn.open_stream("GET", [])).status == 200
        exchange = conn._exchange
        assert exchange is not None and exchange.transport is not None
        while exchange.transport.is_reading():  # the body piles up until reading pauses
            await asyncio.sleep(0.01)
        assert exchange.buffered <= BODY_HIGH_WATER + 256 * 1024
        got = b"".join([part async for part in conn.body()])
        assert got == chunk * count
        await conn.aclose()


def test_a_transport_with_a_header_that_could_split_a_request_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="X-A"):
        HttpClientTransport("http://127.0.0.1:9/acp", headers={"X-A": "1\r\nX-B: 2"})
    with pytest.raises(ValueError) as refused:
        HttpClientTransport("http://127.0.0.1:9/acp", token="secret-token\r\nX-B: 2")
    assert "secret-token" not in str(refused.value)  # the header's name, never its value
