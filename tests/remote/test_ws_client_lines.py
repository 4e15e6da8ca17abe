"""The WebSocket client transport sends each NDJSON line written to it as one text frame,
whatever the shape of the writes: one whole line (the usual write, framed without the line
splitter), several lines at once, a line cut across writes, a CRLF ending; blank lines are
not messages. A real server on 127.0.0.1 answers each message once, in order."""

from __future__ import annotations

import asyncio
import json

import pytest
from _serving import running

from acpstack import Agent
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer
from acpstack.transports import WebSocketClientTransport

pytestmark = pytest.mark.timeout(60)


class Recording(Agent):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        block = params.prompt[0]
        self.seen.append(block.text if isinstance(block, acp.TextContent) else "?")
        return acp.PromptResponse(stop_reason="end_turn")


def request(rid: int, method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


def prompt(rid: int) -> bytes:
    return request(
        rid, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": f"p{rid}"}]}
    )


async def test_every_shape_of_write_sends_each_line_once_in_order() -> None:
    agents: list[Recording] = []

    def make() -> Recording:
        agents.append(Recording())
        return agents[-1]

    answers: list[dict[str, object]] = []
    buffer = bytearray()
    enough = asyncio.Event()

    def on_data(data: bytes) -> None:
        buffer.extend(data)
        *lines, rest = bytes(buffer).split(b"\n")
        buffer[:] = rest
        answers.extend(json.loads(line) for line in lines)
        if len(answers) >= 9:
            enough.set()

    async with running(AgentServer(make)) as url:
        transport = WebSocketClientTransport("ws" + url[4:])
        await transport.connect()
        transport.start_reading(on_data, lambda: enough.set())
        try:
            transport.write(request(1, "initialize", {"protocolVersion": 1}) + b"\n")
            transport.write(request(2, "session/new", {"cwd": "/tmp", "mcpServers": []}) + b"\n")
            transport.write(prompt(3) + b"\n")  # one whole line
            transport.write(prompt(4) + b"\n" + prompt(5) + b"\n")  # two at once
            cut = prompt(6) + b"\n"
            transport.write(cut[:20])  # a line across three writes
            transport.write(cut[20:-1])
            transport.write(cut[-1:] + b"   \n")  # its end, then a blank line
            transport.write(b"\n")
            transport.write(b" \t \n")  # a blank line alone
            transport.write(prompt(7) + b"\r\n")  # CRLF
            transport.write(prompt(8)[:10])  # a partial line, then a whole one after it
            transport.write(prompt(8)[10:] + b"\n" + prompt(9) + b"\n")
            await asyncio.wait_for(enough.wait(), 30)
        finally:
            await transport.close()
    assert [a.get("id") for a in answers] == list(range(1, 10)), answers
    assert all("error" not in a for a in answers), answers
    assert agents[0].seen == [f"p{i}" for i in range(3, 10)]
