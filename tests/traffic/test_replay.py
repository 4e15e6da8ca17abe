"""`acpstack replay`: a recording made through `acpstack inspect` is replayed against the
same agent (no difference) and against a changed one (the differences, with their paths);
the comparison rules are checked on their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.conformance import AgentTarget
from acpstack.traffic import read_recording, replay_recording
from acpstack.traffic._replay import normalize, stream_items

PEERS = Path(__file__).resolve().parents[1] / "conformance" / "peers"
RAW_AGENT = [sys.executable, str(PEERS / "raw_agent.py")]

pytestmark = pytest.mark.timeout(60)


def record_session(tmp_path: Path) -> Path:
    """A client session through `acpstack inspect --record`: initialize, a session, an echo
    turn and a turn with a permission request the client answers."""
    record = tmp_path / "rec.ndjson"
    argv = [sys.executable, "-m", "acpstack", "inspect", "--record", str(record), "--", *RAW_AGENT]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.flush()

    def receive() -> Any:
        assert proc.stdout is not None
        return json.loads(proc.stdout.readline())

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    receive()
    send({"id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}})
    sid = receive()["result"]["sessionId"]
    send(
        {
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
        }
    )
    assert [receive() for _ in range(2)][1]["result"]["stopReason"] == "end_turn"
    send(
        {
            "id": 4,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "permission"}]},
        }
    )
    receive()  # the tool call
    asked = receive()
    assert asked["method"] == "session/request_permission"
    send({"id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
    assert [receive() for _ in range(2)][1]["result"]["stopReason"] == "end_turn"
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    proc.stdout.close()
    return record


async def test_replaying_against_the_same_agent_finds_no_difference(tmp_path: Path) -> None:
    records = read_recording(record_session(tmp_path))
    report = await replay_recording(records, AgentTarget(command=tuple(RAW_AGENT)), quiet=0.3)
    assert report.requests == 4
    assert [str(d) for d in report.differences] == []


async def test_replaying_against_a_changed_agent_reports_where_answers_differ(
    tmp_path: Path,
) -> None:
    records = read_recording(record_session(tmp_path))
    changed = (sys.executable, str(PEERS / "wrong_stop_reason.py"))
    report = await replay_recording(records, AgentTarget(command=changed), quiet=0.3)
    shown = [str(d) for d in report.differences]
    # the echo turn: the stop reason changed
    assert (
        'answer to session/prompt (id 3) at $.result.stopReason: recorded "end_turn", replayed "done"'
        in shown
    )
    # the permission turn: the broken agent no longer asks, so the rest of the stream shifts
    assert any("session/request_permission" in line or "$[1]" in line for line in shown)
    assert report.exit_code == 1


def test_the_cli_prints_the_differences_and_rejects_bad_files(tmp_path: Path) -> None:
    record = record_session(tmp_path)
    replay = [sys.executable, "-m", "acpstack", "replay"]
    done = subprocess.run(
        [*replay, str(record), "--json", "--", sys.executable, str(PEERS / "wrong_stop_reason.py")],
        capture_output=True,
        text=True,
        timeout=40,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["requests"] == 4
    assert {
        "where": "answer to session/prompt (id 3)",
        "path": "$.result.stopReason",
        "recorded": '"end_turn"',
        "replayed": '"done"',
    } in report["differences"]
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"not": "a recording"}\n{}\n')
    done = subprocess.run(
        [*replay, str(bad), "--", *RAW_AGENT], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert "not an acpstack traffic recording" in done.stderr


def test_the_comparison_rules() -> None:
    ids: dict[str, dict[Any, str]] = {}
    message = {
        "_meta": {"trace": 1},
        "toolCallId": "call-9f",
        "nested": [
            {"toolCallId": "call-9f"},
            {"toolCallId": "call-a0", "updatedAt": "2026-01-02T03:04:05Z"},
        ],
        "when": "2026-11-23T10:00:00.123+01:00",
        "text": "not a date 2026",
    }
    assert normalize(message, ids) == {
        "toolCallId": "id-1",
        "nested": [{"toolCallId": "id-1"}, {"toolCallId": "id-2", "updatedAt": "<time>"}],
        "when": "<time>",
        "text": "not a date 2026",
    }
    chunks = [
        {
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": part},
                },
            },
        }
        for part in ("Hel", "lo", " world")
    ]
    joined = stream_items(chunks)
    assert joined == {"s": [{"joined": "agent_message_chunk", "text": "Hello world"}]}
    assert stream_items(chunks[:1] + chunks[1:]) == stream_items(
        [
            {
                **chunks[0],
                "params": {
                    "sessionId": "s",
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "Hello world"},
                    },
                },
            }
        ]
    )
