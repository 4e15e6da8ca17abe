"""The conductor's fast lane: what it only routes goes on as the bytes it came in, a request
with the id it came with, and its answer back as the next hop wrote it. Each test is a raw
NDJSON client on a memory transport (so it picks the ids) in front of a `Conductor` in this
process and the recording agent (tests/proxy/peers) as a process."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.proxy import ChainEnded, Conductor, Proxy
from acpstack.proxy._link import Link
from acpstack.transports import memory_pair

pytestmark = pytest.mark.timeout(60)

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "recording_agent.py")]
WAIT = 30


class RawLines:
    """The client end: writes JSON lines, reads the conductor's lines (bytes as sent)."""

    def __init__(self, proxies: list[Any]) -> None:
        self.ours, theirs = memory_pair()
        self.conductor = Conductor(proxies, AGENT)
        self.running = asyncio.ensure_future(self.conductor.run(theirs))
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.ended = asyncio.Event()
        self._buffer = b""
        self.ours.start_reading(self._data, self.ended.set)

    def _data(self, data: bytes) -> None:
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        for line in lines:
            self.lines.put_nowait(line)

    def send(self, message: dict[str, Any]) -> None:
        self.ours.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def line(self) -> bytes:
        return await asyncio.wait_for(self.lines.get(), WAIT)

    async def answer(self, rid: Any) -> dict[str, Any]:
        """The next line, which must answer `rid`."""
        message: dict[str, Any] = json.loads(await self.line())
        assert message.get("id") == rid, message
        return message

    async def initialize(self) -> None:
        self.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        assert (await self.answer(1))["result"]["protocolVersion"] == 1

    async def close(self) -> None:
        await self.ours.close()
        await asyncio.wait_for(self.running, WAIT)


@pytest.mark.parametrize("proxies", [0, 2], ids=["alone", "two in-process pass-through"])
async def test_a_request_only_routed_keeps_its_id_and_its_answer_comes_back_as_written(
    proxies: int,
) -> None:
    client = RawLines([Proxy() for _ in range(proxies)])
    try:
        await client.initialize()
        client.send({"id": "req-7", "method": "_echo", "params": {"x": 1}})
        line = await client.line()
        # The agent's own bytes (json.dumps spacing), not a re-encoding of them.
        assert line.startswith(b'{"jsonrpc": "2.0", "id": "req-7", "result": {')
        assert json.loads(line)["result"]["id"] == "req-7"  # the id the agent saw
        # A request of the agent's reaches the client under the agent's id, and the
        # client's answer goes back the same way.
        client.send({"id": 8, "method": "_ask", "params": {"q": 1}})
        question = json.loads(await client.line())
        assert question["method"] == "_question" and question["id"] == 1000
        client.send({"id": 1000, "result": {"ok": True}})
        assert (await client.answer(8))["result"] == {"ok": True}
        client.send({"method": "_ping", "params": {"n": 2}})
        assert json.loads(await client.line())["params"] == {"n": 2}
    finally:
        await client.close()


async def test_an_id_the_agent_link_uses_already_is_renumbered_both_ways() -> None:
    client = RawLines([])
    try:
        await client.initialize()  # the conductor asked the agent with an id of its own: 1
        # Held at the agent under the client's id 2 (routed as it came).
        client.send({"id": 2, "method": "_wait", "params": {"hold": True}})
        # session/new is handled whole: the conductor's next id of its own skips 2.
        client.send({"id": 77, "method": "session/new", "params": {"cwd": "/", "hold": False}})
        assert (await client.answer(77))["result"]["id"] == 3
        # Held under the conductor's id 4; then the client uses 4 itself: renumbered.
        client.send({"id": 50, "method": "session/new", "params": {"cwd": "/", "hold": True}})
        client.send({"id": 4, "method": "_echo", "params": {}})
        answer = await client.answer(4)
        assert answer["result"]["id"] == 5 and answer["result"]["seen"][-1] == "_echo"
        client.send({"id": 9, "method": "_echo", "params": {}})
        assert (await client.answer(9))["result"]["id"] == 9  # free again: kept
    finally:
        await client.close()


async def test_a_request_in_flight_when_the_agent_dies_is_answered_once_naming_it() -> None:
    client = RawLines([])
    await client.initialize()
    client.send({"id": 5, "method": "_wait", "params": {"hold": True}})
    client.send({"id": 6, "method": "_echo", "params": {}})
    await client.answer(6)  # so _wait reached the agent before it exits
    client.send({"method": "_exit"})
    with pytest.raises(ChainEnded, match=r"the agent .* exited with code 3"):
        await asyncio.wait_for(client.running, WAIT)
    await asyncio.wait_for(client.ended.wait(), WAIT)
    lines = [json.loads(client.lines.get_nowait()) for _ in range(client.lines.qsize())]
    assert [m["id"] for m in lines] == [5]
    assert "exited with code 3" in lines[0]["error"]["message"]
    await client.ours.close()


async def test_a_cancelled_relayed_request_is_answered_on_its_hop_once() -> None:
    client = RawLines([])
    try:
        await client.initialize()
        client.send({"id": 3, "method": "_wait", "params": {"hold": True}})
        client.send({"method": "$/cancel_request", "params": {"requestId": 3}})
        assert (await client.answer(3))["error"]["code"] == -32800
        # The agent may still answer its 3 late: the id stays taken on its link, so the
        # client's next 3 reaches it renumbered (and gets its own answer, once).
        client.send({"id": 3, "method": "_echo", "params": {}})
        answer = await client.answer(3)
        assert answer["result"]["id"] != 3 and answer["result"]["seen"][-1] == "_echo"
        client.send({"id": 4, "method": "_echo", "params": {}})
        assert (await client.answer(4))["result"]["id"] == 4
    finally:
        await client.close()


async def test_what_the_fast_lane_cannot_read_gets_its_error_and_the_chain_goes_on() -> None:
    client = RawLines([])
    try:
        await client.initialize()
        for line, code in (
            (b'{"id":2,"method":"_echo"}', -32600),  # no jsonrpc member
            (b'{"jsonrpc":"2.0","id":1.5,"method":"_echo"}', -32600),  # an id of no allowed type
            (b'{"jsonrpc":"2.0","id":3,"method":', -32700),  # cut short
            (b"[1, 2", -32700),
        ):
            client.ours.write(line + b"\n")
            answer = json.loads(await client.line())
            assert answer["error"]["code"] == code, (line, answer)
        # An answer to a request nobody made is dropped; a huge request still goes through.
        client.send({"id": 404, "result": {}})
        big = "x" * 5_000_000
        client.send({"id": 5, "method": "_echo", "params": {"big": big}})
        answer = await client.answer(5)
        assert answer["result"]["params"]["big"] == big and answer["result"]["id"] == 5
        assert client.lines.empty()  # nothing else came back
    finally:
        await client.close()


@pytest.mark.parametrize("proxies", [0, 2], ids=["alone", "two in-process pass-through"])
async def test_messages_keep_their_order_whether_a_read_holds_one_or_several(
    proxies: int,
) -> None:
    """A read of one whole line is passed on at once; a read of several goes through the
    frame split and the per-link write. Mixed, with a message the conductor handles whole
    between them, the agent sees them in the order sent and each answer keeps its id."""
    client = RawLines([Proxy() for _ in range(proxies)])

    def line(message: dict[str, Any]) -> bytes:
        return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"

    try:
        await client.initialize()
        sent = []
        for rid in range(10, 50, 4):
            several = [
                {"id": rid, "method": "_echo", "params": {"n": rid}},
                {"method": "_ping", "params": {"n": rid}},
                {"id": rid + 1, "method": "session/new", "params": {"cwd": "/", "hold": False}},
                {"id": rid + 2, "method": "_echo", "params": {"n": rid + 2}},
            ]
            client.ours.write(b"".join(line(m) for m in several))
            client.send({"id": rid + 3, "method": "_echo", "params": {"n": rid + 3}})
            sent += ["_echo", "_ping", "session/new", "_echo", "_echo"]
        answers: dict[Any, dict[str, Any]] = {}
        pongs = []
        while len(answers) < 40:
            message = json.loads(await client.line())
            if message.get("method") == "_pong":
                pongs.append(message["params"]["n"])
            else:
                answers[message["id"]] = message
        assert sorted(answers) == list(range(10, 50))
        last = answers[49]["result"]
        assert last["id"] == 49 and last["params"] == {"n": 49}  # routed with its own id
        assert last["seen"][-len(sent) :] == sent
        assert pongs[: len(range(10, 50, 4))] == list(range(10, 50, 4))
    finally:
        await client.close()


async def test_a_line_written_at_once_goes_after_what_the_link_has_waiting() -> None:
    """`Link.write_now` (the fast lane's send) writes past the link's writer only when
    nothing waits in it: a frame queued for the end of the loop turn goes first."""
    ours, theirs = memory_pair()
    got: list[bytes] = []
    theirs.start_reading(got.append, lambda: None)
    link = Link(ours, "peer", handler=Conductor([], AGENT))
    link.send_frame(b"1\n")  # written at once
    link.send_frame(b"2\n")  # waits for the end of this loop turn
    link.write_now(b"3\n")
    link.write_now(b"4\n")
    for _ in range(5):
        await asyncio.sleep(0)
    assert b"".join(got) == b"1\n2\n3\n4\n"
    await ours.close()
    await theirs.close()
