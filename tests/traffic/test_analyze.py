"""What `acpstack inspect` makes of a connection's traffic: each message checked against the
schema of the protocol version the connection negotiated (v1, v2), and the conversation
rebuilt from either version's updates. A v2 recording of acpstack's own agent, made through
`acpstack inspect`, has no violation at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.traffic import Record, TrafficAnalyzer, read_recording
from acpstack.traffic._replay import replay_notes

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "v2"))
from _lines import LineClient  # noqa: E402

pytestmark = pytest.mark.timeout(90, func_only=True)
SID = "s-1"


def client(message: dict[str, Any]) -> Record:
    return Record(0.0, "client", {"jsonrpc": "2.0", **message})


def agent(message: dict[str, Any]) -> Record:
    return Record(0.0, "agent", {"jsonrpc": "2.0", **message})


def update(body: dict[str, Any]) -> Record:
    return agent({"method": "session/update", "params": {"sessionId": SID, "update": body}})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def v2_conversation() -> list[Record]:
    """A valid v2 connection: a turn with an echoed prompt, a tool call known only from
    tool_call_update (renamed once), a permission request, streamed and whole messages."""
    info = {"name": "test", "version": "1"}
    return [
        client({"id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": info}}),
        agent({"id": 0, "result": {"protocolVersion": 2, "info": info, "capabilities": {}}}),
        client({"id": 1, "method": "session/new", "params": {"cwd": "/w"}}),
        agent({"id": 1, "result": {"sessionId": SID}}),
        client(
            {
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": SID, "prompt": [text("hello")]},
            }
        ),
        update({"sessionUpdate": "user_message", "messageId": "u1", "content": [text("hello")]}),
        update({"sessionUpdate": "state_update", "state": "running"}),
        agent({"id": 2, "result": {"messageId": "u1"}}),
        update({"sessionUpdate": "agent_thought_chunk", "messageId": "t1", "content": text("hm")}),
        update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": "Edit",
                "kind": "edit",
            }
        ),
        update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Edit a.txt"}),
        update({"sessionUpdate": "state_update", "state": "requires_action"}),
        agent(
            {
                "id": 0,
                "method": "session/request_permission",
                "params": {
                    "sessionId": SID,
                    "title": "Edit a.txt",
                    "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
                    "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
                },
            }
        ),
        client({"id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "ok"}}}),
        update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
        update({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("Do")}),
        update({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("ne")}),
        update({"sessionUpdate": "agent_message", "messageId": "a1", "content": [text("Done.")]}),
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]


def analyze(records: list[Record]) -> TrafficAnalyzer:
    analyzer = TrafficAnalyzer()
    for record in records:
        analyzer.add(record)
    return analyzer


def violations(analyzer: TrafficAnalyzer) -> list[str]:
    return [f"{e['seq']}: {v}" for e in analyzer.events for v in e["violations"]]


def conversation(analyzer: TrafficAnalyzer) -> list[tuple[str, str]]:
    """The conversation as the page shows it (whole messages and renamed tool calls
    replace their entry, chunks of one message are joined)."""
    shown: list[dict[str, Any]] = []
    keys: dict[str, dict[str, Any]] = {}
    for event in analyzer.events:
        entry = event.get("conversation")
        if entry is None:
            continue
        key = entry.get("message")
        if entry.get("replace") and key in keys:
            keys[key]["text"] = entry["text"]
            continue
        last = shown[-1] if shown else None
        if last and not entry.get("new") and last["role"] == entry["role"]:
            if last.get("message") == key:
                last["text"] += entry["text"]
                continue
        shown.append(dict(entry))
        if key is not None:
            keys[key] = shown[-1]
    return [(e["role"], e["text"]) for e in shown]


def test_a_v2_connection_is_checked_against_the_v2_schema() -> None:
    analyzer = analyze(v2_conversation())
    assert analyzer.protocol_version == 2
    assert violations(analyzer) == []
    summaries = [e["summary"] for e in analyzer.events]
    assert "prompt accepted (message u1)" in summaries
    assert "state idle (end_turn)" in summaries
    assert "permission: Edit a.txt" in summaries


def test_the_v2_conversation_has_tool_titles_and_whole_messages() -> None:
    analyzer = analyze(v2_conversation())
    assert conversation(analyzer) == [
        ("user", "hello"),  # once: the user_message that echoes the prompt is not repeated
        ("thought", "hm"),
        ("tool", "Edit a.txt"),  # created by a titled tool_call_update, then renamed
        ("agent", "Done."),  # the chunks, replaced by the whole message
    ]


def test_v2_violations_are_found_with_the_v2_schema() -> None:
    records = v2_conversation()
    records[7] = agent({"id": 2, "result": {"stopReason": "end_turn"}})  # v1's answer
    records[6] = update({"sessionUpdate": "state_update"})  # no state
    analyzer = analyze(records)
    assert violations(analyzer) == [
        "7: session/update (UpdateSessionNotification) at $.params.update: `state` is "
        "missing; expected one of: running, idle, requires_action",
        "8: session/prompt (PromptResponse) at $.result: 'messageId' is a required property",
    ]


def test_a_v1_connection_is_checked_against_the_v1_schema() -> None:
    records = [
        client({"id": 0, "method": "initialize", "params": {"protocolVersion": 2}}),
        agent({"id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}}}),
        client(
            {
                "id": 1,
                "method": "session/prompt",
                "params": {"sessionId": SID, "prompt": [text("hi")]},
            }
        ),
        update({"sessionUpdate": "state_update", "state": "idle"}),  # v2's, not v1's
        agent({"id": 1, "result": {"stopReason": "end_turn"}}),
    ]
    analyzer = analyze(records)
    assert analyzer.protocol_version == 1  # asked for 2, answered 1
    found = violations(analyzer)
    # the client asked for 2 in v1's shape (v2 requires `info`); the v2 update is no v1 one
    assert (
        found[0] == "1: initialize (InitializeRequest) at $.params: 'info' is a required property"
    )
    assert found[1].startswith("4: session/update (SessionNotification) at $.params.update: ")
    assert "`sessionUpdate` is 'state_update'" in found[1]
    assert len(found) == 2


def test_a_v1_tool_call_and_load_replay_are_shown_as_before() -> None:
    call = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "kind": "read"}
    chunk = {"sessionUpdate": "agent_message_chunk", "content": text("ok")}
    load = {"sessionId": SID, "cwd": "/w", "mcpServers": []}
    records = [
        client({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        agent({"id": 0, "result": {"protocolVersion": 1}}),
        client({"id": 1, "method": "session/prompt", "params": {"sessionId": SID, "prompt": []}}),
        update(call),
        update(chunk),
        agent({"id": 1, "result": {"stopReason": "end_turn"}}),
        client({"id": 2, "method": "session/load", "params": load}),
        update(call),  # the history again: shown again, not merged into the first
        update(chunk),
        agent({"id": 2, "result": {}}),
    ]
    analyzer = analyze(records)
    assert violations(analyzer) == []
    assert conversation(analyzer) == [
        ("user", ""),
        ("tool", "Read"),
        ("agent", "ok"),
        ("tool", "Read"),
        ("agent", "ok"),
    ]


def test_replaying_a_v2_recording_says_the_workspace_changes_again() -> None:
    [note] = replay_notes(v2_conversation())
    assert note.startswith("the recording speaks protocol v2: a v2 agent edits files")
    assert "again in /w;" in note
    v1 = [client({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}})]
    assert replay_notes([*v1, agent({"id": 0, "result": {"protocolVersion": 1}})]) == []


async def test_acpstack_agent_on_v2_through_inspect(tmp_path: Path) -> None:
    # The audit's case: a v2 client and acpstack's agent, through `acpstack inspect`. The
    # recording has no violation, and the page's conversation shows what the agent did.
    (tmp_path / "NOTES.md").write_text("# Notes\n")
    record = tmp_path / "rec.ndjson"
    inspect = [sys.executable, "-m", "acpstack", "inspect", "--record", str(record), "--"]
    agent_cmd = [sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db")]

    def answer(request: dict[str, Any]) -> Any:
        if request["method"] != "session/request_permission":
            raise LookupError(request["method"])
        option = request["params"]["options"][0]["optionId"]
        return {"outcome": {"outcome": "selected", "optionId": option}}

    line = await LineClient.start([*inspect, *agent_cmd], answer=answer)
    try:
        init = {"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}
        assert (await line.request("initialize", init, timeout=60))["result"][
            "protocolVersion"
        ] == 2
        new = await line.request("session/new", {"cwd": str(tmp_path)})
        sid = new["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [text("add a note")]}  # a task: tools run
        start = len(line.messages)
        await line.request("session/prompt", prompt)
        await line.wait_for(
            lambda m: (
                m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle"
            ),
            timeout=60,
            start=start,
        )
    finally:
        assert await line.close() == 0
    analyzer = analyze(read_recording(record))
    assert analyzer.protocol_version == 2
    assert violations(analyzer) == []
    shown = conversation(analyzer)
    assert shown[0] == ("user", "add a note") and [r for r, _ in shown].count("user") == 1
    titles = [
        u["title"]
        for r in read_recording(record)
        if r.side == "agent" and isinstance(r.message, dict)
        for u in [r.message.get("params", {}).get("update", {})]
        if u.get("sessionUpdate") == "tool_call_update" and isinstance(u.get("title"), str)
    ]
    assert titles  # the agent's turn used tools
    assert [t for r, t in shown if r == "tool"] == titles
    assert any(r == "agent" and t for r, t in shown)
    # `acpstack replay` of it would edit the workspace again: it says so first
    assert str(tmp_path) in replay_notes(read_recording(record))[0]


def test_the_replay_cli_prints_the_note(tmp_path: Path) -> None:
    record = tmp_path / "rec.ndjson"
    lines = [{"acpstack": "traffic", "version": 1, "started": 0.0}]
    lines += [r.to_json() for r in v2_conversation()[:4]]  # initialize and session/new
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    peer = HERE.parent / "conformance" / "peers" / "v2_turn_agent.py"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acpstack",
            "replay",
            str(record),
            "--json",
            "--",
            sys.executable,
            str(peer),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "acpstack replay: note: the recording speaks protocol v2" in done.stderr
    report = json.loads(done.stdout)
    assert report["notes"][0].startswith("the recording speaks protocol v2")
    assert report["requests"] == 2


def test_v1_agent_messages_apart_from_each_other_are_separate_entries() -> None:
    # v1 has no message ids: text after a plan or a tool call is a message of its own.
    info = {"name": "test", "version": "1"}
    records = [
        client({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        agent({"id": 0, "result": {"protocolVersion": 1, "agentInfo": info}}),
        client({"id": 1, "method": "session/prompt", "params": {"sessionId": SID, "prompt": []}}),
        update({"sessionUpdate": "agent_message_chunk", "content": text("Let me ")}),
        update({"sessionUpdate": "agent_message_chunk", "content": text("look.")}),
        update({"sessionUpdate": "plan", "entries": []}),
        update({"sessionUpdate": "agent_message_chunk", "content": text("Here is the plan.")}),
        update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
        update({"sessionUpdate": "agent_message_chunk", "content": text("Done.")}),
    ]
    assert conversation(analyze(records)) == [
        ("user", ""),
        ("agent", "Let me look."),
        ("agent", "Here is the plan."),
        ("agent", "Done."),
    ]
