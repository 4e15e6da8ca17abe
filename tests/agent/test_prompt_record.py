"""A prompt is stored before its turn is answered, also when the turn sends nothing: the
prompt's event has no update to deliver, so only its storing is waited for (no delivery
task), and a prompt that could not be stored fails its turn with `store_unavailable`.

A real SQLite file; a full database is SQLite's own SQLITE_FULL (`PRAGMA max_page_count`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acpstack import Client, connect_client
from acpstack.agent import SessionAgent, SqliteSessionStore, Turn, connect_agent
from acpstack.agent._writer import writer_for
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair
from acpstack.wire import RequestError


class Silent(SessionAgent):
    async def prompt(self, turn: Turn) -> str:
        return "end_turn"


def _prompt(sid: str, text: str) -> acp.PromptRequest:
    return acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=text)])


async def test_a_prompt_that_cannot_be_stored_fails_its_turn_and_the_next_one_works(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    agent_side, client_side = memory_pair()
    client_conn = connect_client(Client(), client_side)
    async with connect_agent(Silent(store=store), agent_side), client_conn.connection:
        peer = client_conn.agent
        await peer.initialize(acp.InitializeRequest(protocol_version=1))
        new = acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
        sid = (await peer.session_new(new)).session_id
        assert (await peer.session_prompt(_prompt(sid, "first"))).stop_reason == "end_turn"

        writer = writer_for(store)
        pages = await writer.call(
            lambda: store._connection().execute("PRAGMA page_count").fetchone()[0]
        )
        await writer.call(lambda: store._connection().execute(f"PRAGMA max_page_count = {pages}"))
        with pytest.raises(RequestError) as refused:
            await peer.session_prompt(_prompt(sid, "x" * 200_000))
        assert isinstance(refused.value.data, dict)
        assert refused.value.data.get("reason") == "store_unavailable"

        # The failed connection is replaced: the next turn stores its prompt again.
        assert (await peer.session_prompt(_prompt(sid, "third"))).stop_reason == "end_turn"
    texts = [
        payload.decode()
        for payload in (event.payload for event in store.events(sid) if event.kind == "prompt")
    ]
    assert len(texts) == 2 and '"first"' in texts[0] and '"third"' in texts[1]
    store.close()
