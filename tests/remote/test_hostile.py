"""Hostile traffic against `AgentServer` on uvicorn, over real sockets on 127.0.0.1.

Each attack runs against small configured limits (so that a few connections prove the
bound), and each ends with `/healthz` answered. Loops are bounded: an attack that the
server failed to stop ends with a failed assertion, never a hang.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from _serving import load_scripted, running

from acpstack.server import AgentServer, ServerLimits, ServerSecurity

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

TOKEN = "hostile-test-token"
LIMITS = ServerLimits(
    max_header_bytes=4096,
    header_timeout=1.0,
    body_timeout=1.0,
    max_untrusted_connections=8,
    untrusted_grace=0.0,  # the cap at once (the burst's grace has its own test)
    max_message_size=64 * 1024,
    sessionless_idle_timeout=0.5,
)


class Raw:
    """One raw TCP connection to the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Raw:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, data: bytes) -> bool:
        """False once the server has closed the connection."""
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, BrokenPipeError):
            return False
        return True

    async def answer(self, timeout: float = 10) -> bytes:
        """Everything the server sends until it closes the connection (then ours closes)."""
        out = b""
        try:
            async with asyncio.timeout(timeout):
                while chunk := await self._read():
                    out += chunk
        finally:
            self.close()
        return out

    async def _read(self) -> bytes:
        try:
            return await self.reader.read(65536)
        except ConnectionError:
            return b""

    async def flood(self, chunk: bytes, most: int) -> tuple[int, bytes]:
        """Send `chunk` again and again (`most` bytes at most) until the server answers
        and closes; returns how much was sent, and the answer."""
        answer = asyncio.ensure_future(self.answer())
        sent = 0
        while sent < most and not answer.done() and await self.send(chunk):
            sent += len(chunk)
            await asyncio.sleep(0)  # the server runs on this loop
        return sent, await answer

    def close(self) -> None:
        self.writer.close()


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


async def healthz(port: int) -> int:
    raw = await Raw.open(port)
    await raw.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    answer = await raw.answer(5)
    raw.close()
    return status(answer)


def post_head(length: int | None, token: str = TOKEN, extra: bytes = b"") -> bytes:
    size = (
        b"Transfer-Encoding: chunked\r\n" if length is None else b"Content-Length: %d\r\n" % length
    )
    return (
        b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + token.encode() + b"\r\n" + size + extra + b"\r\n"
    )


@pytest.fixture
async def server() -> AsyncIterator[tuple[AgentServer, int]]:
    app = AgentServer(
        load_scripted().ScriptedAgent, security=ServerSecurity(token=TOKEN), limits=LIMITS
    )
    async with running(app) as url:
        yield app, int(url.rsplit(":", 1)[1].split("/")[0])


async def test_an_endless_header_gets_431_and_the_connection_closes(
    server: tuple[AgentServer, int],
) -> None:
    app, port = server
    raw = await Raw.open(port)
    await raw.send(b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: ")
    sent, answer = await raw.flood(b"a" * 1024, 4 * 1024 * 1024)
    assert status(answer) == 431, answer[:200]
    assert sent < 1024 * 1024, f"{sent} bytes of headers sent before the server refused"
    assert app.guard.header_too_large == 1
    assert await healthz(port) == 200


async def test_slow_headers_get_408_within_the_header_timeout(
    server: tuple[AgentServer, int],
) -> None:
    app, port = server
    loris = [await Raw.open(port) for _ in range(6)]
    for raw in loris:
        await raw.send(b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")
    answers = await asyncio.gather(*(raw.answer() for raw in loris))
    assert [status(a) for a in answers] == [408] * 6
    assert app.guard.header_timeouts == 6
    assert app.guard.waiting == {}
    assert await healthz(port) == 200


async def test_slow_headers_of_a_second_request_on_a_kept_alive_connection_get_408(
    server: tuple[AgentServer, int],
) -> None:
    """A request head that came whole costs no timer; the next one on the same
    connection that does not come whole is timed all the same."""
    app, port = server
    raw = await Raw.open(port)
    await raw.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = b""
    while b"\r\n\r\n" not in first:
        first += await raw._read()
    assert status(first) == 200
    await raw.send(b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")
    answer = await raw.answer()  # what is left of the first answer, then the second
    assert b"HTTP/1.1 408 " in answer, answer[-300:]
    assert app.guard.header_timeouts == 1


async def test_a_body_that_never_ends_gets_408_within_the_body_timeout(
    server: tuple[AgentServer, int],
) -> None:
    _, port = server
    raws = [await Raw.open(port) for _ in range(3)]
    await raws[0].send(post_head(None) + b'5\r\n{"jso\r\n')  # chunked, never finished
    await raws[1].send(post_head(1000) + b'{"jsonrpc"')  # 1000 bytes announced, 10 sent
    await raws[2].send(post_head(None))  # no chunk at all
    answers = await asyncio.gather(*(raw.answer() for raw in raws))
    assert [status(a) for a in answers] == [408] * 3
    assert await healthz(port) == 200


async def test_401_and_413_close_the_connection_without_reading_the_body(
    server: tuple[AgentServer, int],
) -> None:
    _, port = server
    cases = [
        (post_head(1 << 30, token="wrong"), 401),  # 1 GiB announced, wrong token
        (post_head(1 << 30), 413),  # over the limit, said up front
        (post_head(None), 413),  # chunked, goes over the limit on the way
    ]
    for head, expected in cases:
        raw = await Raw.open(port)
        await raw.send(head)
        chunked = b"chunked" in head
        piece = b"10000\r\n" + b" " * 0x10000 + b"\r\n" if chunked else b" " * 0x10000
        # keep sending (bounded) until the server closes: it must not drain the body
        sent, answer = await raw.flood(piece, 16 * 1024 * 1024)
        assert status(answer) == expected, answer[:200]
        assert b"connection: close" in answer.lower()
        assert sent < 8 * 1024 * 1024, f"the server read {sent} bytes of a refused body"
        raw.close()
    assert await healthz(port) == 200


@pytest.fixture
def python_recursion_limit() -> Iterator[None]:
    """The interpreter's default recursion limit, which bounds how deep the decoder goes:
    another test in this process (hypothesis) may have raised it."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


async def test_deep_nesting_gets_400_not_500(
    server: tuple[AgentServer, int], python_recursion_limit: None
) -> None:
    _, port = server
    depth = 8_000  # bodies under the 64 KiB limit, far past the recursion limit
    bodies = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
        + b"[" * depth
        + b"]" * depth
        + b"}",
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":'
        + b'{"a":' * depth
        + b"1"
        + b"}" * (depth + 2),
    ]
    for body in bodies:
        raw = await Raw.open(port)
        await raw.send(post_head(len(body), extra=b"Connection: close\r\n") + body)
        answer = await raw.answer()
        assert status(answer) == 400, answer[:200]
        error = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
        assert error["code"] == -32700 and "nested too deeply" in error["message"]
    assert await healthz(port) == 200


async def test_idle_connections_beyond_the_cap_are_evicted_oldest_first(
    server: tuple[AgentServer, int],
) -> None:
    app, port = server
    cap = LIMITS.max_untrusted_connections
    idle = [await Raw.open(port) for _ in range(cap + 4)]
    # the 4 oldest make room for the newest: each gets 503 and is closed
    answers = await asyncio.gather(*(raw.answer() for raw in idle[:4]))
    assert [status(a) for a in answers] == [503] * 4
    assert app.guard.evicted >= 4
    # an authenticated client still gets in while the rest of them hang on
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    ).encode()
    raw = await Raw.open(port)
    await raw.send(post_head(len(body), extra=b"Connection: close\r\n") + body)
    assert status(await raw.answer()) == 200
    assert len(app.guard.waiting) <= cap
    for other in idle:
        other.close()
    assert await healthz(port) == 200


async def test_a_burst_of_new_connections_is_not_refused_below_twice_the_cap() -> None:
    # A failover's clients connect all at once (each with its streams) before the server
    # has read any request: within `untrusted_grace`, none is refused up to twice the cap;
    # past twice the cap the oldest is refused even then (file descriptors stay bounded).
    limits = dataclasses.replace(LIMITS, untrusted_grace=60.0)
    app = AgentServer(
        load_scripted().ScriptedAgent, security=ServerSecurity(token=TOKEN), limits=limits
    )
    async with running(app) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        cap = limits.max_untrusted_connections
        burst = [await Raw.open(port) for _ in range(2 * cap)]
        async with asyncio.timeout(10):
            while len(app.guard.waiting) < 2 * cap:  # each accepted
                await asyncio.sleep(0.01)
        assert app.guard.evicted == 0
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        ).encode()
        for raw in burst:
            await raw.send(post_head(len(body), extra=b"Connection: close\r\n") + body)
        answers = await asyncio.gather(*(raw.answer() for raw in burst))
        assert [status(a) for a in answers] == [200] * (2 * cap)
        idle = [await Raw.open(port) for _ in range(2 * cap + 1)]
        assert status(await idle[0].answer()) == 503  # the one past twice the cap
        assert app.guard.evicted == 1
        for raw in [*burst, *idle]:
            raw.close()


async def test_abandoned_initializes_are_reaped_after_the_sessionless_timeout(
    server: tuple[AgentServer, int],
) -> None:
    app, port = server
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    ).encode()
    for _ in range(5):
        raw = await Raw.open(port)
        await raw.send(post_head(len(body), extra=b"Connection: close\r\n") + body)
        assert status(await raw.answer()) == 200
    assert len(app.connections) == 5
    async with asyncio.timeout(10):  # 0.5 s configured; the reaper looks every 0.125 s
        while app.connections:
            await asyncio.sleep(0.05)
    assert await healthz(port) == 200


async def test_refused_websocket_handshakes_log_no_error(
    server: tuple[AgentServer, int],
) -> None:
    _, port = server
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    loggers = [logging.getLogger(n) for n in ("uvicorn.error", "acpstack.server")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        for _ in range(20):
            raw = await Raw.open(port)
            await raw.send(
                b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                b"Sec-WebSocket-Version: 13\r\n\r\n"
            )
            assert status(await raw.answer()) == 401
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    assert [r.getMessage() for r in records if r.levelno > logging.INFO] == []
    assert await healthz(port) == 200


async def test_a_flood_of_refused_handshakes_logs_one_line_a_second(
    server: tuple[AgentServer, int],
) -> None:
    app, port = server
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    logger = logging.getLogger("acpstack.server")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    floods, started = 60, time.monotonic()
    try:
        for _ in range(floods):
            raw = await Raw.open(port)
            await raw.send(
                b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                b"Sec-WebSocket-Version: 13\r\n\r\n"
            )
            assert status(await raw.answer()) == 401
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    elapsed = time.monotonic() - started
    lines = [r.getMessage() for r in records if "handshake refused" in r.getMessage()]
    assert 1 <= len(lines) <= int(elapsed) + 1  # one a second at most, whatever the load
    # every refusal is accounted for: logged, counted in a later line, or still pending
    counted = [int(m.group(1)) for line in lines if (m := re.search(r"and (\d+) more", line))]
    assert len(lines) + sum(counted) + app.refusal_log.left_out == floods
    assert await healthz(port) == 200
