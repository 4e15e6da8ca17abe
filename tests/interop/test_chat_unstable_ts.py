"""`acpstack chat --unstable`, headless, driving the official TypeScript SDK 2.4.0 unstable
agent (peers/ts_unstable_agent.mjs) over real pipes: its auth status before and after
`--auth key`, and its subagent, inter-session message and child state updates, in json
records and in text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _foreign  # noqa: E402

pytestmark = [
    pytest.mark.timeout(180, func_only=True),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]
CHAT = [sys.executable, "-m", "acpstack", "chat", "--unstable", "--auth", "key"]


@pytest.fixture(scope="module")
def ts_agent() -> list[str]:
    assert _foreign.node_sdk_dir() is not None, "node is on PATH but npm is not"
    return _foreign.ts_unstable_agent_cmd()


def chat(tmp_path: Path, agent: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    return subprocess.run(
        [*CHAT, *args, "--", *agent],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_their_agents_auth_and_subagents_as_json_records(
    tmp_path: Path, ts_agent: list[str]
) -> None:
    done = chat(tmp_path, ts_agent, "-p", "subagent", "--format", "json")
    assert done.returncode == 0, done.stderr
    lines: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    result = lines[-1]
    events = [r for r in lines if r.get("type") not in (None, "result")]
    session_id = result["sessionId"]
    child = f"child-{session_id}"
    assert events == [
        {"type": "auth_status", "state": "unauthenticated", "accounts": []},
        {"type": "auth_status", "state": "authenticated", "accounts": []},
        {
            "type": "subagent",
            "sessionId": session_id,
            "subagentSessionId": child,
            "title": "Researcher",
            "description": None,
            "state": "running",
            "stopReason": None,
            "error": None,
        },
        {
            "type": "session_message",
            "sessionId": session_id,
            "messageId": "m-1",
            "senderSessionId": session_id,
            "recipientSessionId": child,
            "text": "Find the bug. Report back.",
        },
        {
            "type": "subagent",
            "sessionId": session_id,
            "subagentSessionId": child,
            "title": "Researcher",
            "description": None,
            "state": "idle",
            "stopReason": "end_turn",
            "error": None,
        },
    ]
    assert result["exitCode"] == 0 and result["stopReason"] == "end_turn"


def test_their_agents_subagents_in_text(tmp_path: Path, ts_agent: list[str]) -> None:
    done = chat(tmp_path, ts_agent, "-p", "subagent")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "[message] main → Researcher: Find the bug. Report back.",
        "[subagent] Researcher (idle: end_turn)",
    ]
    assert lines[2].startswith("child=child-ts-") and len(lines) == 3
    assert done.stderr.splitlines()[:2] == ["auth: unauthenticated", "auth: authenticated"]
