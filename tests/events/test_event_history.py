"""A history as today's `SessionAgent` stores it (v1 JSON, in a real SQLite file, written
by a real turn over an in-memory connection) reads as events: every stored update decodes
to a known event whose v1 encoding is the stored bytes, and whose v2 encoding is what the
old v1-to-v2 conversion (`agent/_v2_convert.py`) made of it."""

from __future__ import annotations

import json
from pathlib import Path

from acpstack import events as ev
from acpstack.agent import (
    SessionAgent,
    SqliteSessionStore,
    Turn,
    connect_agent,
    diff_content,
    text_content,
)
from acpstack.agent._v2_convert import MessageIds, update_to_v2
from acpstack.client import Client, connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair


class Busy(SessionAgent):
    """A turn that sends one of most kinds a v1 `SessionAgent` can send."""

    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.think("Reading first.")
        await turn.say("Hello ")
        await turn.say("world")
        await turn.plan([("Edit a.py", "in_progress"), "Test"])
        await turn.usage(10, 100, cost=acp.Cost(amount=0.25, currency="USD"))
        edit = await turn.start_tool("Edit a.py", kind="edit", locations=["/w/a.py"])
        await edit.progress(content=[diff_content("/w/a.py", "a\n", "b\n")])
        await edit.complete(content=[text_content("done")], raw_output={"ok": True})
        await turn.start_tool("Run tests", kind="execute", raw_input={"cmd": "pytest"})
        await turn.cancel_unfinished()
        return "end_turn"


class Quiet(Client):
    async def session_update(self, params: acp.SessionNotification) -> None:
        pass


async def test_a_stored_v1_history_reads_as_events(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    agent_side, client_side = memory_pair()
    client_conn = connect_client(Quiet(), client_side)
    async with connect_agent(Busy(store=store), agent_side), client_conn.connection:
        peer = client_conn.agent
        await peer.initialize(acp.InitializeRequest(protocol_version=1))
        new = acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
        sid = (await peer.session_new(new)).session_id
        prompt = acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="go")])
        assert (await peer.session_prompt(prompt)).stop_reason == "end_turn"
    stored = [e.payload for e in SqliteSessionStore(tmp_path / "sessions.sqlite3").events(sid)
              if e.kind == "update"]  # fmt: skip

    events = [ev.v1.decode(payload) for payload in stored]
    kinds = [ev.kind_of(e) for e in events]
    assert not [e for e in events if isinstance(e, ev.UnknownEvent)]
    for kind in ("agent_thought_chunk", "agent_message_chunk", "plan", "usage_update",
                 "tool_call", "tool_call_update"):  # fmt: skip
        assert kind in kinds, kinds
    # The neutral JSON of a v1 history is the stored bytes: nothing to migrate.
    assert [ev.v1.encode(e, unstable=True) for e in events] == stored
    assert [ev.encode_event(e) for e in events] == stored

    old_ids, new_ids = MessageIds("m"), ev.MessageIds("m")
    for payload, event in zip(stored, events, strict=True):
        old = update_to_v2(json.loads(payload), old_ids)
        new = ev.v2.encode(event, new_ids, client_terminals=True)
        assert ([] if new is None else [json.loads(new)]) == old
    cancelled = [e for e in events if isinstance(e, ev.ToolCallUpdate) and e.status == "failed"]
    assert len(cancelled) == 1
    assert json.loads(ev.v2.encode(cancelled[0], new_ids) or b"")["status"] == "cancelled"
