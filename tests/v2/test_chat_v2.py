"""`acpstack chat`, unchanged, completes turns with a v1 agent and with a v2-only agent
(the reference agent restricted to protocol v2: tests/v2/peers/reference_agent.py),
headless and at a real terminal (tmux). Real processes: the chat, and the agent it starts."""

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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli" / "peers"))
from term import HAVE_TMUX, Tmux  # noqa: E402


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
    assert frames[-1]["protocolVersion"] == 2
    # The chat asks for 1 (v2 is a draft), the v2-only agent says which it speaks, the chat
    # asks again for 2 on the same connection.
    assert received[0]["error"]["data"] == {"requested": 1, "supported": [2]}
    assert received[1]["result"]["protocolVersion"] == 2
    updates = [m["params"]["update"] for m in received if m.get("method") == "session/update"]
    states = [u.get("state") for u in updates if u["sessionUpdate"] == "state_update"]
    assert states[-2:] == ["running", "idle"]
    assert updates[-1]["stopReason"] == "end_turn"


@pytest.mark.parametrize(("version", "negotiated"), [("v1", 1), ("v2", 2)])
def test_the_version_is_in_the_log_and_the_record(
    ws: Path, tmp_path: Path, version: str, negotiated: int
) -> None:
    result = chat(ws, agents(tmp_path)[version], "-p", "/help", "--json", "-v")
    assert result.returncode == 0, result.stderr
    assert f"ACP protocol version {negotiated} negotiated" in result.stderr
    if negotiated == 2:  # the chat asked for 1 first
        assert "does not speak ACP protocol version 1; asking for 2" in result.stderr
    record = json.loads(result.stdout.splitlines()[-1])
    assert record["type"] == "result" and record["protocolVersion"] == negotiated


@pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed")
def test_interactive_chat_with_a_v2_only_agent(ws: Path, tmp_path: Path) -> None:
    # A person at a terminal: two turns, a permission asked and answered by key (the agent
    # reports requires_action meanwhile), the session's history kept; Ctrl-D quits.
    term = Tmux(tmp_path, 100)
    env = {
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
    }
    try:
        term.start(
            [sys.executable, "-m", "acpstack", "chat", "--", *agents(tmp_path)["v2"]], ws, env
        )
        term.wait_for("(ACP v2)")
        term.wait_for(at_prompt)
        term.type("/read README.md")
        term.keys("Enter")
        term.wait_for(lambda s: "# Readme" in s and at_prompt(s))
        term.type("/edit README.md Readme Hello")
        term.keys("Enter")
        term.wait_for("choose 1-")
        term.keys("1")  # the first option allows
        term.wait_for(lambda s: "Edited README.md." in s and at_prompt(s))
        assert (ws / "README.md").read_text() == "# Hello\n"
        term.keys("C-d")
        assert term.exit_code() == 0
    finally:
        term.close()


def at_prompt(screen: str) -> bool:
    return screen.rstrip().endswith(">")


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_a_chat_over_url_reaches_a_v2_only_agent_behind_serve(
    ws: Path, tmp_path: Path, scheme: str
) -> None:
    # The chat asks for 1 and the agent says it speaks only 2. Over streamable HTTP the
    # second `initialize` must open a new remote connection: the first one's answer was an
    # error, and the server refuses an `initialize` on an existing connection.
    serve = subprocess.Popen(
        [sys.executable, "-m", "acpstack", "serve", "--port", "0", "--no-token", "--"]
        + agents(tmp_path)["v2"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stderr is not None
        urls = serve.stderr.readline().split(" on ")[1].split(" and ")
        url = next(u.strip() for u in urls if u.startswith(scheme + "://"))
        argv = [sys.executable, "-m", "acpstack", "chat", "--url", url, "-p", "/help", "-v"]
        env = dict(os.environ, ACPSTACK_STORE=str(tmp_path / "chat-sessions.db"))
        result = subprocess.run(
            argv,
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        serve.terminate()
        serve.communicate(timeout=20)
    assert result.returncode == 0, result.stderr
    assert "ACP protocol version 2 negotiated" in result.stderr
    assert "scripted offline agent" in result.stdout
