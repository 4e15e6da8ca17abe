"""The HTTP/1.1 client under the HTTP transport, against a bare asyncio server on 127.0.0.1:
keep-alive reuse, a kept-alive connection the server closed, chunked bodies, bad replies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import h11
import pytest

from acpstack.transports._http1 import Http1Connection, endpoint

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
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with srv:
        url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/acp"
        conn = Http1Connection(endpoint(url), connect_timeout=5, max_event_size=1024)
        with pytest.raises(h11.RemoteProtocolError):
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
