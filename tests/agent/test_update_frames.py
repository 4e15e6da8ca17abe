"""A `SessionAgent`'s updates on the wire: whichever framing the client speaks (each
update's frame is made once per session and connection for newline-delimited JSON; with
Content-Length headers the envelope is encoded each time), from a store that stores at
once and from one with a writer thread, in order, and the same as what the store keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpstack.agent import MemorySessionStore, SessionAgent, SqliteSessionStore, Turn, connect_agent
from acpstack.client import Client, connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair


class Streamer(SessionAgent):
    async def prompt(self, turn: Turn) -> acp.StopReason:
        for i in range(3):
            await turn.say(f"chunk {i}")
        await turn.plan(["one"])
        return "end_turn"


class Collector(Client):
    def __init__(self) -> None:
        self.updates: list[acp.SessionNotification] = []

    async def session_update(self, params: acp.SessionNotification) -> None:
        self.updates.append(params)


def _texts(updates: list[acp.SessionNotification]) -> list[object]:
    return [
        u.update.content.text if isinstance(u.update, acp.AgentMessageChunk) else type(u.update)
        for u in updates
        if isinstance(u.update, (acp.AgentMessageChunk, acp.Plan))
        and isinstance(getattr(u.update, "content", acp.TextContent(text="")), acp.TextContent)
    ]


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_updates_reach_the_client_in_its_framing_and_match_the_history(
    tmp_path: Path, framing: str, store_kind: str
) -> None:
    store = (
        MemorySessionStore()
        if store_kind == "memory"
        else SqliteSessionStore(tmp_path / "sessions.sqlite3")
    )
    client = Collector()
    agent_side, client_side = memory_pair()
    agent_conn = connect_agent(Streamer(store=store), agent_side)
    client_conn = connect_client(client, client_side, framing=framing)
    async with agent_conn, client_conn.connection:
        peer = client_conn.agent
        await peer.initialize(acp.InitializeRequest(protocol_version=1))
        new = acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
        sid = (await peer.session_new(new)).session_id
        prompt = acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="go")])
        answer = await peer.session_prompt(prompt)
        live = list(client.updates)
        client.updates.clear()
        await peer.session_load(
            acp.LoadSessionRequest(session_id=sid, cwd=str(tmp_path), mcp_servers=[])
        )
        replayed = [u for u in client.updates if not isinstance(u.update, acp.UserMessageChunk)]
    assert answer.stop_reason == "end_turn"
    assert _texts(live) == ["chunk 0", "chunk 1", "chunk 2", acp.Plan]
    assert all(u.session_id == sid for u in live)
    # What the client saw live is what the store keeps (the replay sends it back).
    assert replayed == live
