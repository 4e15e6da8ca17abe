"""Bad input written raw to a real acpstack agent process: every answer checked exactly."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpstack.wire import FrameDecoder, ProtocolState

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "core_agent.py")]


class RawPeer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls) -> RawPeer:
        proc = await asyncio.create_subprocess_exec(
            *AGENT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=2**26,
        )
        return cls(proc)

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 20)
        assert line, "the agent closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    async def call(self, rid: int, method: str, params: Any) -> dict[str, Any]:
        await self.send(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
            + b"\n"
        )
        return await self.reply()

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 20)
        assert self.proc.stderr is not None
        self.stderr = (await self.proc.stderr.read()).decode()


@pytest.fixture
async def peer() -> AsyncIterator[RawPeer]:
    """A raw agent process, ended at teardown even when the test fails half way (its
    pipes left open would hold the event loop's teardown)."""
    raw = await RawPeer.start()
    try:
        yield raw
    finally:
        if raw.proc.returncode is None:
            raw.proc.kill()
            await raw.proc.wait()


async def test_every_kind_of_bad_input_and_the_connection_survives(peer: RawPeer) -> None:
    # Before initialize: refused.
    reply = await peer.call(1, "session/new", {"cwd": "/", "mcpServers": []})
    assert reply["id"] == 1 and reply["error"]["code"] == -32600
    reply = await peer.call(2, "initialize", {"protocolVersion": 1})
    assert reply["result"]["protocolVersion"] == 1

    cases: list[tuple[bytes, int, Any]] = [
        (b"{not json at all\n", -32700, None),
        (b"[1,\n", -32700, None),  # refused as an array before it was read to its end
        (b"[" * 1000 + b"\n", -32700, None),
        (
            b'{"jsonrpc":"2.0","id":13,"method":"session/new","params":{"cwd":"/","mcpServers":[]},"x":"\\ud800"}\n',
            -32700,
            13,
        ),
        (b"[]\n", -32600, None),
        (b"[1, 2]\n", -32600, None),
        (b"42\n", -32600, None),
        (b'"str"\n', -32600, None),
        (b"null\n", -32600, None),
        (b'{"jsonrpc":"1.0","id":5,"method":"initialize"}\n', -32600, 5),
        (b'{"jsonrpc":"2.0","id":6}\n', -32600, 6),
        (b'{"jsonrpc":"2.0","id":7,"method":"no/such/method"}\n', -32601, 7),
        (
            b'{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"cwd":3,"mcpServers":[]}}\n',
            -32602,
            8,
        ),
    ]
    for data, code, rid in cases:
        await peer.send(data)
        reply = await peer.reply()
        assert (
            reply["jsonrpc"] == "2.0" and reply["id"] == rid and reply["error"]["code"] == code
        ), (data, reply)
        if code == -32602:
            assert reply["error"]["data"]["path"] == "$.params.cwd"
        if rid == 13:
            assert "lone UTF-16 surrogate escape \\ud800" in reply["error"]["data"]["detail"]

    # Notifications that must get no answer at all, then a request that must be answered first.
    await peer.send(b'{"jsonrpc":"2.0","method":"no/such/notification"}\n')
    await peer.send(b'{"jsonrpc":"2.0","id":999,"result":{}}\n')  # a response nobody asked for
    await peer.send(b'{"jsonrpc":"2.0","id":null,"result":{}}\n')
    reply = await peer.call(9, "_test/echo", {"ext": True})
    assert reply == {"jsonrpc": "2.0", "id": 9, "result": {"ext": True}}

    # A handler bug: -32603, generic message, a correlation id, no details on the wire.
    sid = (await peer.call(10, "session/new", {"cwd": "/", "mcpServers": []}))["result"][
        "sessionId"
    ]
    reply = await peer.call(
        11, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "boom"}]}
    )
    assert reply["error"]["code"] == -32603 and reply["error"]["message"] == "Internal error"
    assert reply["error"]["data"]["correlationId"] and "secret-detail" not in json.dumps(reply)

    # A 100 MiB line with the default 64 MiB limit: answered with its id, skipped unread.
    before = peer.rss_kb()
    await peer.send(b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"blob":"')
    chunk = b"a" * (1 << 20)
    for _ in range(100):
        await peer.send(chunk)
    await peer.send(b'"}}\n')
    reply = await peer.reply()
    assert reply["id"] == 7 and reply["error"]["code"] == -32600
    assert peer.rss_kb() - before < 80 * 1024, "the agent buffered the oversized line"

    # The connection still works end to end.
    reply = await peer.call(
        12, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "stream 2"}]}
    )
    updates = [reply]
    while "result" not in updates[-1]:
        updates.append(await peer.reply())
    assert [u["params"]["update"]["content"]["text"] for u in updates[:-1]] == [
        "00000000",
        "00000001",
    ]
    assert updates[-1] == {"jsonrpc": "2.0", "id": 12, "result": {"stopReason": "end_turn"}}
    await peer.close()
    assert "secret-detail" in peer.stderr  # the details went to the log
    # Each refused line was logged once, the one refused for its params too (not its values).
    assert (
        peer.stderr.count("refused request 'session/new' (id 8): invalid params at $.params.cwd")
        == 1
    )
    assert "noise from initialize" in peer.stderr


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_random_bytes_never_crash_the_state_machine(chunks: list[bytes]) -> None:
    for framing in ("auto", "content-length"):
        auto = ProtocolState("agent", framing=framing)
        for chunk in chunks:
            auto.receive(chunk)
            auto.take_outgoing()
        auto.receive_eof()
    state = ProtocolState("agent", framing="ndjson")
    for chunk in chunks:
        state.receive(chunk)
        state.take_outgoing()
    state.receive_eof()
    # Still usable afterwards.
    events = state.receive(
        b'\n{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    assert len(events) == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=100),
            st.sampled_from([b"\n", b"{", b"}", b'"id":', b"[", b"]", b"null", b'"jsonrpc":"2.0"']),
        ),
        max_size=30,
    )
)
def test_json_like_noise_never_crashes(chunks: list[bytes]) -> None:
    state = ProtocolState("client")
    state.receive(b"".join(chunks) + b"\n")
    # Noise starting with a Content-Length header switches the state to that framing, and
    # replies mirror it: decode them with the framing the state chose.
    replies = FrameDecoder(framing=state.send_mode).feed(state.take_outgoing())
    for frame in replies:
        assert isinstance(frame, bytes)
        reply = json.loads(frame)
        assert reply["error"]["code"] in (-32700, -32600, -32601)
