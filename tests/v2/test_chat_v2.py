"""`acpstack chat`, unchanged, completes turns with a v1 agent and with a v2-only agent
(the reference agent restricted to protocol v2: tests/v2/peers/reference_agent.py).
Real processes: the chat, and the agent it starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(120, func_only=True)
PEER = Path(__file__).resolve().parent / "peers" / "reference_agent.py"


def agents(tmp_path: Path) -> dict[str, list[str]]:
    store = str(tmp_path / "sessions.db")
    return {
        "v1": [sys.executable, "-m", "acpstack", "agent", "--store", store],
        "v2": [sys.executable, str(PEER), store],
    }


def chat(ws: Path, agent: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "acpstack", "chat", *args, "--", *agent]
    return subprocess.run(
        argv, cwd=ws, env=dict(os.environ), capture_output=True, text=True, timeout=90
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    return workspace


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_headless_turns_with_either_version(ws: Path, tmp_path: Path, version: str) -> None:
    agent = agents(tmp_path)[version]
    result = chat(ws, agent, "-p", "/edit README.md Readme Hello", "--approve-all")
    assert result.returncode == 0, result.stderr
    assert (ws / "README.md").read_text() == "# Hello\n"
    assert "Edited `README.md`." in result.stdout
    result = chat(ws, agent, "-p", "/read README.md")
    assert result.returncode == 0, result.stderr
    assert "# Hello" in result.stdout


def test_the_wire_of_a_v2_chat(ws: Path, tmp_path: Path) -> None:
    result = chat(ws, agents(tmp_path)["v2"], "-p", "/help", "--json")
    assert result.returncode == 0, result.stderr
    frames: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]
    received = [f["message"] for f in frames if f.get("direction") == "recv"]
    assert frames[-1]["type"] == "result" and frames[-1]["stopReason"] == "end_turn"
    # The chat asks for 1 (v2 is a draft), the v2-only agent says which it speaks, the chat
    # asks again for 2 on the same connection.
    assert received[0]["error"]["data"] == {"requested": 1, "supported": [2]}
    assert received[1]["result"]["protocolVersion"] == 2
    updates = [m["params"]["update"] for m in received if m.get("method") == "session/update"]
    states = [u.get("state") for u in updates if u["sessionUpdate"] == "state_update"]
    assert states[-2:] == ["running", "idle"]
    assert updates[-1]["stopReason"] == "end_turn"
