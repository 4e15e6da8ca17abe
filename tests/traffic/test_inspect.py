"""`acpstack inspect` between real processes: bytes forwarded unchanged both ways, every
frame recorded with its direction and time, the agent's exit code passed on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acpstack.traffic import read_recording

HERE = Path(__file__).resolve().parent
INSPECT = [sys.executable, "-m", "acpstack", "inspect"]
sys.path.insert(0, str(HERE.parent / "interop"))
import _foreign  # noqa: E402

pytestmark = pytest.mark.timeout(60, func_only=True)


def client_bytes() -> bytes:
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
        # UTF-8 with U+2028 inside a string, and a CRLF line end: both must pass untouched
        '{"jsonrpc":"2.0","id":"two","method":"x","params":{"t":"é\u2028ü"}}\r\n'.encode(),
        b"this line is not JSON\n",
        b'{"jsonrpc":"2.0","id":3,"method":"big"}\n',
        b'{"jsonrpc":"2.0","id":4,"method":"pad","params":{"p":"'
        + b"x" * (2 * 1024 * 1024)
        + b'"}}\n',
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}',  # no newline
    ]
    return b"".join(lines)


def test_frames_pass_byte_identical_both_ways_and_are_recorded(tmp_path: Path) -> None:
    tee_in, tee_out, record = tmp_path / "in", tmp_path / "out", tmp_path / "rec.ndjson"
    env = {**os.environ, "TEE_IN": str(tee_in), "TEE_OUT": str(tee_out)}
    agent = [sys.executable, str(HERE / "peers" / "tee_agent.py")]
    sent = client_bytes()
    done = subprocess.run(
        [*INSPECT, "--record", str(record), "--", *agent],
        input=sent,
        capture_output=True,
        env=env,
        timeout=50,
    )
    assert done.returncode == 7  # the agent's exit code
    assert tee_in.read_bytes() == sent  # what the client wrote is what the agent read
    assert done.stdout == tee_out.read_bytes()  # and the other way round
    assert b"tee agent: started" in done.stderr  # stderr passes through

    records = read_recording(record)
    from_client = [r for r in records if r.side == "client" and r.stderr is None]
    from_agent = [r for r in records if r.side == "agent" and r.stderr is None]
    assert len(from_client) == 6 and len(from_agent) == 6
    assert from_client[1].message["params"]["t"] == "é\u2028ü"
    assert from_client[2].raw == "this line is not JSON" and "not JSON" in from_client[2].problem
    assert from_client[5].message["method"] == "session/cancel"  # the unterminated last line
    assert from_agent[0].raw is not None  # the agent's non-JSON stdout line
    assert len(from_agent[3].message["result"]["blob"]) == 512 * 1024
    assert from_agent[5].message["method"] == "bye"
    assert any(r.stderr == "tee agent: started" for r in records)
    times = [r.ts for r in records]
    assert times == sorted(times)


def test_an_agent_that_cannot_start_is_reported(tmp_path: Path) -> None:
    done = subprocess.run(
        [*INSPECT, "--", str(tmp_path / "missing-agent")], capture_output=True, timeout=30
    )
    assert done.returncode == 127
    assert b"cannot run" in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_inspect_between_acpstack_chat_and_the_typescript_sdk_agent(tmp_path: Path) -> None:
    record = tmp_path / "rec.ndjson"
    agent = _foreign.ts_agent_cmd()
    chat = [sys.executable, "-m", "acpstack", "chat", "--cwd", str(tmp_path), "-p", "stream 3"]
    done = subprocess.run(
        [*chat, "--", *INSPECT, "--record", str(record), "--", *agent],
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, done.stderr
    assert "chunk-00000003" in done.stdout
    messages = [r.message for r in read_recording(record) if r.is_message]
    methods = [m.get("method") for m in messages]
    assert methods[:3] == ["initialize", None, "session/new"]
    assert methods.count("session/update") == 3
    prompt_answer = next(m for m in messages if m.get("result", {}).get("stopReason"))
    assert prompt_answer["result"]["stopReason"] == "end_turn"
    # every line of the recording is one JSON object (NDJSON)
    assert all(isinstance(json.loads(line), dict) for line in record.read_text().splitlines())
