"""Serving on stdio: stray print() output never reaches the wire; EOF ends the agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "core_agent.py")]


def test_prints_go_to_stderr_and_stdin_eof_exits_cleanly() -> None:
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []},
        },
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run(AGENT, input=stdin, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert "noise from initialize" in proc.stderr
    assert "noise" not in proc.stdout
