"""Headless `acpstack chat --unstable` over real pipes: the agent's auth status (asked at
start, updated as it changes), subagents and inter-session messages in text and json, the
`unstable` profile key, and that nothing changes without `--unstable`.

Agents: `acpstack agent --unstable` (auth status, not required) and tests/e2e/peers/
unstable_agent.py (a SessionAgent whose prompt `subagent` announces a child session,
sends it a message in two parts and lets it go idle; with `--auth` it needs
`authenticate` first). The reference agent runs no subagents of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.cli._chat import Chat, ChatOptions
from acpstack.cli._chat_auth import AuthStatusShown
from acpstack.schema import v1_unstable as acpu

CHAT = [sys.executable, "-m", "acpstack", "chat"]
REFERENCE = [sys.executable, "-m", "acpstack", "agent", "--unstable"]
E2E_AGENT = [sys.executable, str(Path(__file__).parents[1] / "e2e" / "peers" / "unstable_agent.py")]
CHILDREN_AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "children_agent.py")]

pytestmark = pytest.mark.timeout(60)


def chat(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        ACPSTACK_STORE=str(tmp_path / "sessions.db"),
        CHILDREN_STORE=str(tmp_path / "children.db"),
    )
    return subprocess.run(
        [*CHAT, *args],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=50,
    )


def records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def events(stdout: str) -> list[dict[str, Any]]:
    """The chat's own records (auth status, subagents, messages), not the wire's."""
    return [r for r in records(stdout) if r.get("type") not in (None, "result")]


def sent(stdout: str) -> list[str]:
    return [
        r["message"].get("method")
        for r in records(stdout)
        if r.get("direction") == "send" and "method" in r["message"]
    ]


def test_the_auth_status_is_asked_at_start_and_shown_once(tmp_path: Path) -> None:
    done = chat(tmp_path, "--unstable", "-p", "hello", "--approve-all", "--", *REFERENCE)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("auth: not required") == 1
    done = chat(tmp_path, "--unstable", "-p", "hi", "--json", "--approve-all", "--", *REFERENCE)
    assert done.returncode == 0, done.stderr
    assert sent(done.stdout)[:3] == ["initialize", "auth/status", "session/new"]
    assert events(done.stdout) == [{"type": "auth_status", "state": "not_required", "accounts": []}]
    assert "auth:" not in done.stderr  # json: a record, not a line


def test_the_built_in_agent_offers_the_unstable_methods_too(tmp_path: Path) -> None:
    # No agent named: `chat --unstable` starts `acpstack agent --unstable`, not a v1-only one.
    done = chat(tmp_path, "--unstable", "-p", "hi", "--json", "--approve-all")
    assert done.returncode == 0, done.stderr
    assert sent(done.stdout)[:3] == ["initialize", "auth/status", "session/new"]
    done = chat(tmp_path, "-p", "hi", "--json", "--approve-all")
    assert done.returncode == 0, done.stderr
    assert "auth/status" not in sent(done.stdout)


def test_without_unstable_nothing_changes(tmp_path: Path) -> None:
    done = chat(tmp_path, "-p", "subagent", "--json", "--", *E2E_AGENT)
    assert done.returncode == 0, done.stderr
    assert "auth/status" not in sent(done.stdout) and events(done.stdout) == []
    initialize = records(done.stdout)[0]["message"]["params"]
    assert "subagents" not in initialize["clientCapabilities"]
    done = chat(tmp_path, "-p", "subagent", "--", *E2E_AGENT)
    assert "[subagent]" not in done.stdout and "[message]" not in done.stdout
    assert "auth:" not in done.stderr


def test_subagents_and_messages_are_shown_once_in_text(tmp_path: Path) -> None:
    done = chat(tmp_path, "--unstable", "-p", "subagent", "--", *E2E_AGENT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The child's description is cleared after it went idle: its line reads the same.
    assert lines[:2] == [
        "[message] main → Researcher: Find the bug. Report back.",
        "[subagent] Researcher (idle: end_turn)",
    ]
    assert lines[2].startswith("child=") and len(lines) == 3


def test_subagents_and_messages_are_records_in_json(tmp_path: Path) -> None:
    done = chat(tmp_path, "--unstable", "-p", "subagent", "--format", "json", "--", *E2E_AGENT)
    assert done.returncode == 0, done.stderr
    found = events(done.stdout)[1:]  # after the auth status
    session_id = records(done.stdout)[-1]["sessionId"]
    child = found[0]["subagentSessionId"]
    assert [(r["type"], r.get("state"), r.get("description")) for r in found] == [
        ("subagent", "running", "reads the code"),
        ("session_message", None, None),
        ("subagent", "idle", "reads the code"),
        ("subagent", "idle", None),
    ]
    assert found[1] == {
        "type": "session_message",
        "sessionId": session_id,
        "messageId": found[1]["messageId"],
        "senderSessionId": session_id,
        "recipientSessionId": child,
        "text": "Find the bug. Report back.",
    }
    assert found[2]["stopReason"] == "end_turn" and found[2]["title"] == "Researcher"


def test_what_is_still_live_when_the_turn_ends_is_shown_then(tmp_path: Path) -> None:
    done = chat(tmp_path, "--unstable", "-p", "open", "--", *CHILDREN_AGENT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "watching",
        "[subagent] Watcher (running)",
        "[message] Watcher → main: first words last words",
    ]
    done = chat(tmp_path, "--unstable", "-p", "open", "--json", "--", *CHILDREN_AGENT)
    assert done.returncode == 0, done.stderr
    found = events(done.stdout)[1:]
    assert [(r["type"], r.get("state"), r.get("text")) for r in found] == [
        ("subagent", "running", None),
        ("session_message", None, "first words last words"),
    ]


def test_the_auth_status_follows_authentication(tmp_path: Path) -> None:
    done = chat(
        tmp_path, "--unstable", "--auth", "key", "-p", "hi", "--json", "--", *E2E_AGENT, "--auth"
    )
    assert done.returncode == 0, done.stderr
    states = [r["state"] for r in events(done.stdout) if r["type"] == "auth_status"]
    assert states == ["unauthenticated", "authenticated"]
    done = chat(tmp_path, "--unstable", "--auth", "key", "-p", "hi", "--", *E2E_AGENT, "--auth")
    assert done.returncode == 0, done.stderr
    assert done.stderr.index("auth: unauthenticated") < done.stderr.index("auth: authenticated")


def test_a_failing_auth_status_is_one_line_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHILDREN_AUTH_STATUS", "fail")
    done = chat(tmp_path, "--unstable", "-p", "hello", "--", *CHILDREN_AGENT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo: hello\n"
    assert done.stderr.splitlines() == [
        "the agent's auth status is unknown: Internal error: the key ring is locked (code -32603)"
    ]


def profile(tmp_path: Path, unstable: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "acpstack"
    folder.mkdir(parents=True, exist_ok=True)
    command = json.dumps([*E2E_AGENT])
    (folder / "config.toml").write_text(
        f"[agents.kids]\ncommand = {command}\nunstable = {unstable}\n", encoding="utf-8"
    )


def test_a_profile_can_ask_for_an_unstable_connection(tmp_path: Path) -> None:
    profile(tmp_path, "true")
    done = chat(tmp_path, "kids", "-p", "subagent")
    assert done.returncode == 0, done.stderr
    assert "[subagent] Researcher (idle: end_turn)" in done.stdout
    profile(tmp_path, "false")
    done = chat(tmp_path, "kids", "-p", "subagent")
    assert done.returncode == 0, done.stderr
    assert "[subagent]" not in done.stdout
    profile(tmp_path, '"yes"')
    done = chat(tmp_path, "kids", "-p", "subagent")
    assert done.returncode == 2
    assert "`agents.kids.unstable` must be true or false" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("output", ["json", "text"])
def test_each_auth_state_is_shown_once(output: str, capsys: pytest.CaptureFixture[str]) -> None:
    """In process (a real Chat, nothing connected): the answer to auth/status and updates
    that repeat it show nothing new."""
    shown = AuthStatusShown(Chat(ChatOptions(interactive=False, output=output)))
    shown(acpu.AuthStatusResponse(state="unauthenticated"))
    shown(acpu.AuthStatusUpdateNotification(state="unauthenticated"))
    account = acpu.AuthAccount(label="Claude Max", active=True, email="ada@example.com")
    shown(acpu.AuthStatusUpdateNotification(state="authenticated", accounts=[account]))
    shown(acpu.AuthStatusUpdateNotification(state="authenticated", accounts=[account]))
    captured = capsys.readouterr()
    if output == "json":
        assert records(captured.out) == [
            {"type": "auth_status", "state": "unauthenticated", "accounts": []},
            {
                "type": "auth_status",
                "state": "authenticated",
                "accounts": [{"label": "Claude Max", "active": True, "email": "ada@example.com"}],
            },
        ]
        assert captured.err == ""
    else:
        assert captured.err.splitlines() == [
            "auth: unauthenticated",
            "auth: authenticated · Claude Max (active)",
        ]
        assert captured.out == ""
