"""Pausing the HTTP client transport stops reading its event stream's socket (TCP pushes
back on the server), and resuming delivers everything, in order. A real server on
127.0.0.1 (the scripted agent streaming a long turn), the transport driven directly."""

from __future__ import annotations

import asyncio
import json

import pytest
from _serving import load_scripted, running

from acpstack.server import AgentServer
from acpstack.transports import HttpClientTransport

pytestmark = pytest.mark.timeout(60)
CHUNKS = 3000


def _request(rid: int, method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


async def test_a_paused_transport_stops_reading_the_stream_and_loses_nothing() -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as url:
        transport = HttpClientTransport(url, one_stream=True)
        messages: list[dict[str, object]] = []
        first_update = asyncio.Event()
        answered: dict[int, asyncio.Event] = {i: asyncio.Event() for i in range(3)}

        def on_data(data: bytes) -> None:
            for line in data.splitlines():
                message = json.loads(line)
                messages.append(message)
                if message.get("method") == "session/update" and not first_update.is_set():
                    first_update.set()
                    transport.pause_reading()  # from inside delivery, as a runtime would
                if isinstance(message.get("id"), int) and "method" not in message:
                    answered[message["id"]].set()  # type: ignore[index]

        transport.start_reading(on_data, lambda: None)
        transport.write(_request(0, "initialize", {"protocolVersion": 1}) + b"\n")
        await answered[0].wait()
        transport.write(_request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}) + b"\n")
        await answered[1].wait()
        session = messages[-1]["result"]["sessionId"]  # type: ignore[index]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": f"stream {CHUNKS}"}]}
        transport.write(_request(2, "session/prompt", prompt) + b"\n")
        await first_update.wait()
        streams = list(transport._reading_streams)
        assert len(streams) == 1
        exchange = streams[0]._exchange
        assert exchange is not None and exchange.transport is not None
        assert not exchange.transport.is_reading()  # the socket waits: TCP pushes back
        assert not answered[2].is_set()
        transport.resume_reading()
        assert exchange.transport.is_reading()
        await answered[2].wait()
        texts = [
            m["params"]["update"]["content"]["text"]  # type: ignore[index]
            for m in messages
            if m.get("method") == "session/update"
        ]
        assert texts == [f"{i:08d}" for i in range(CHUNKS)]
        await transport.close()
