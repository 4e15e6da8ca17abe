"""A busy stream's updates cross the server in batches (`RemoteConnection._updates_read`
and `_updates_only`: a read from the agent that holds only session updates is pushed to
the connection's stream at once) and the client's reads in one piece
(`SseDecoder.feed_lines`): every update arrives once, in order, before the prompt's answer,
with the odd ones (an `"id"` key inside, a `\\u` escape) among them; `/metrics` counts
each. An `AgentServer` on uvicorn on 127.0.0.1 and our client, over HTTP and WebSocket."""

from __future__ import annotations

import sys

import httpx
import pytest
from _serving import running

from acpstack import Client
from acpstack.client import connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer
from acpstack.server._connection import RemoteConnection

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

UPDATES = 5000
ODD = {1000: "id", 3000: "escape"}  # these updates take the whole way, among the others


# A stdio agent that writes a turn's updates and its answer in one write: the server
# reads them many to a read (a pipe's worth), whatever the machine's load.
AGENT = f"""
import json, os, sys
UPDATES, ODD = {UPDATES}, {ODD!r}
for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if method == "initialize":
        result = {{"protocolVersion": 1, "agentCapabilities": {{}}}}
    elif method == "session/new":
        result = {{"sessionId": "s1"}}
    elif method == "session/prompt":
        out = []
        for index in range(UPDATES):
            text = f"{{index:08d}}" + ("\\x01" if ODD.get(index) == "escape" else "")
            update = {{"sessionUpdate": "agent_message_chunk",
                      "content": {{"type": "text", "text": text}}}}
            if ODD.get(index) == "id":
                update["_meta"] = {{"id": index}}  # an `"id"` key in an update's params
            params = {{"sessionId": "s1", "update": update}}
            out.append({{"jsonrpc": "2.0", "method": "session/update", "params": params}})
        out.append({{"jsonrpc": "2.0", "id": rid, "result": {{"stopReason": "end_turn"}}}})
        lines = "".join(json.dumps(m, separators=(",", ":")) + "\\n" for m in out)
        os.write(1, lines.encode())
        continue
    else:
        continue
    os.write(1, (json.dumps({{"jsonrpc": "2.0", "id": rid, "result": result}}) + "\\n").encode())
"""


class Recording(Client):
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        assert isinstance(update, acp.AgentMessageChunk)
        assert isinstance(update.content, acp.TextContent)
        self.texts.append(update.content.text)


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_every_update_arrives_once_in_order_and_is_counted(
    scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    batched: list[int] = []
    push = RemoteConnection._push_updates

    def counting(self: RemoteConnection, text: bytes, frames: list[bytes]) -> bool:
        taken = push(self, text, frames)
        if taken:
            batched.append(len(frames))
        return taken

    monkeypatch.setattr(RemoteConnection, "_push_updates", counting)
    app = AgentServer([sys.executable, "-c", AGENT])
    async with running(app) as url:
        client = Recording()
        async with connect_remote(url.replace("http", scheme, 1), client) as conn:
            await conn.agent.initialize()
            new = await conn.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
            answer = await conn.agent.session_prompt(
                acp.PromptRequest(session_id=new.session_id, prompt=[acp.TextContent(text="go")])
            )
            assert answer.stop_reason == "end_turn"
            # everything before the answer, once, in order
            expected = [
                f"{i:08d}" + ("\x01" if ODD.get(i) == "escape" else "") for i in range(UPDATES)
            ]
            assert client.texts == expected
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(url.rsplit("/", 1)[0] + "/metrics")).text
    assert f"acp_updates_sent_total {float(UPDATES)}" in metrics
    # The batches carried the stream (so the test covers them), the odd ones went alone.
    assert sum(batched) > UPDATES // 2
