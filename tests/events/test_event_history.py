"""A history as today's `SessionAgent` stores it (v1 JSON, in a real SQLite file, written
by a real turn over an in-memory connection) reads as events: every stored update decodes
to a known event whose v1 encoding is the stored bytes, and whose v2 encoding is a valid
v2 update of the same meaning."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from acpstack import events as ev
from acpstack.agent import (
    SessionAgent,
    SqliteSessionStore,
    Turn,
    connect_agent,
    diff_content,
    text_content,
)
from acpstack.client import Client, connect_client
from acpstack.schema import UnknownSessionUpdate, v2
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

    new_ids = ev.MessageIds("m")
    decode_v2 = msgspec.json.Decoder(v2.SessionUpdate).decode
    in_v2 = [ev.v2.encode(event, new_ids, client_terminals=True) for event in events]
    wire = [decode_v2(data) for data in in_v2 if data is not None]
    assert len(wire) == len(events)  # every kind of this turn exists in v2
    assert not any(isinstance(update, UnknownSessionUpdate) for update in wire)
    tags = {json.loads(data)["sessionUpdate"] for data in in_v2 if data is not None}
    assert tags >= {"agent_thought_chunk", "agent_message_chunk", "plan_update", "usage_update",
                    "tool_call_update"}  # fmt: skip
    assert "tool_call" not in tags and "plan" not in tags  # v1's kinds, mapped
    diffs = [json.loads(data) for data in in_v2 if data is not None and b'"diff"' in data]
    assert diffs and all("patch" in d["content"][0] for d in diffs)
    cancelled = [e for e in events if isinstance(e, ev.ToolCallUpdate) and e.status == "failed"]
    assert len(cancelled) == 1
    assert json.loads(ev.v2.encode(cancelled[0], new_ids) or b"")["status"] == "cancelled"
