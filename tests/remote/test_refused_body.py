"""A request body the server refuses before reading it to its end (413) still gets its
answer over a real socket, however much of the body is left unread: the server shuts its
writing side, throws away what still comes and closes after the client (a plain close
with unread input would make the kernel send a reset, and the client's kernel would drop
the 413 before the client read it). The server reads 64 KiB at a time meanwhile."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _serving import load_scripted, running

from acpstack._reads import HEAP_READ_SIZE
from acpstack.server import AgentServer, ServerLimits, _linger

pytestmark = pytest.mark.timeout(60)

LIMIT = 64 * 1024


@pytest.fixture
async def port() -> AsyncIterator[int]:
    app = AgentServer(load_scripted().ScriptedAgent, limits=ServerLimits(max_message_size=LIMIT))
    async with running(app) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def _head(length: int | None) -> bytes:
    size = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        "POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{size}\r\n\r\n"
    ).encode()


def _post_then_read(port: int, request: bytes) -> bytes:
    """Send the whole request (as HTTP clients do before they read), then read to the end."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _chunked(body: bytes) -> bytes:
    step = 32 * 1024
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + step]), body[i : i + step])
        for i in range(0, len(body), step)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


@pytest.mark.parametrize("size", [LIMIT + 6_000, 2 * 1024 * 1024])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_a_body_too_large_gets_its_413_not_a_reset(
    port: int, size: int, declared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    recv_into = socket.socket.recv_into
    recv = socket.socket.recv

    def server_side(sock: socket.socket) -> bool:
        return sock.family == socket.AF_INET and sock.getsockname()[1] == port

    def counting_recv(self: socket.socket, n: int, *args: Any) -> bytes:
        if server_side(self):
            reads.append(n)
        return recv(self, n, *args)

    def counting_recv_into(self: socket.socket, buffer: Any, n: int = 0, *args: Any) -> int:
        if server_side(self):
            reads.append(n or len(buffer))
        return recv_into(self, buffer, n, *args)

    monkeypatch.setattr(socket.socket, "recv", counting_recv)
    monkeypatch.setattr(socket.socket, "recv_into", counting_recv_into)
    body = b'{"jsonrpc":"2.0","method":"x","params":{"pad":"' + b"x" * size + b'"}}'
    request = _head(len(body)) + body if declared else _head(None) + _chunked(body)
    answer = await asyncio.to_thread(_post_then_read, port, request)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"at most 65536 bytes" in answer
    # (this test runs on the stdlib loop, whose socket transports call recv)
    assert reads and max(reads) <= HEAP_READ_SIZE, sorted(set(reads))


async def test_a_refused_client_that_stays_is_closed_after_the_linger(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_linger, "LINGER_SECONDS", 0.2)

    def post_part_and_stay() -> tuple[bytes, str]:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(_head(10 * LIMIT) + b"x" * LIMIT)  # 9 * LIMIT never sent
            answer = b""
            while chunk := sock.recv(65536):  # the 413, then the end of the stream
                answer += chunk
            # the server reads and drops what still comes, then closes on its own (it does
            # not wait for the rest of the body): a send then fails
            for _ in range(3000):
                try:
                    sock.sendall(b"x")
                except (BrokenPipeError, ConnectionResetError):
                    return answer, "closed"
                time.sleep(0.01)
        return answer, "still open after 30 s"

    answer, end = await asyncio.to_thread(post_part_and_stay)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert end == "closed"


async def test_a_refused_client_that_keeps_sending_is_cut_off(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_linger, "LINGER_BYTES", 1024 * 1024)

    def send_forever() -> int:
        sent = 0
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(_head(1 << 40))
            try:
                while True:
                    sent += sock.send(b"x" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                return sent

    sent = await asyncio.to_thread(send_forever)
    assert sent >= 1024 * 1024  # it had its linger's worth (and what the buffers held)
