"""Named sessions (`chat -s NAME`), the lock that keeps one writer per session, and
`acpstack sessions list|show|history|delete|export|agent`. Real chat processes against
the reference agent (its sessions persist, so a named session really continues)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from procs import assert_ended, children, cmdline  # noqa: E402

ACPSTACK = [sys.executable, "-m", "acpstack"]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    monkeypatch.setenv("ACPSTACK_STORE", str(tmp_path / "agent.db"))
    return workspace


def run(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACPSTACK, *args],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def records(ws: Path, *flags: str) -> list[dict[str, Any]]:
    done = run(ws, "sessions", "list", "--format", "json", *flags)
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def test_a_named_session_continues_in_its_directory(ws: Path) -> None:
    first = run(ws, "chat", "-s", "work", "-p", "/edit README.md Readme Hello", "--approve-all")
    assert first.returncode == 0, first.stderr
    second = run(ws, "chat", "-s", "work", "-p", "/plan")
    assert second.returncode == 0, second.stderr
    [record] = [r for r in records(ws) if r["name"] == "work"]
    assert record["turns"] == 2 and record["cwd"] == str(ws)
    other = ws.parent / "other"
    other.mkdir()
    third = run(other, "chat", "-s", "work", "-p", "/plan")  # same name, another directory
    assert third.returncode == 0, third.stderr
    in_other = [r for r in records(other) if r["name"] == "work"]
    assert len(in_other) == 1 and in_other[0]["session_id"] != record["session_id"]
    history = run(ws, "sessions", "history", "work", "--format", "json")
    turns = json.loads(history.stdout)["turns"]
    assert [turn[0]["text"] for turn in turns] == ["/edit README.md Readme Hello", "/plan"]
    assert any(e["role"] == "tool" and e["text"] == "Edit README.md" for e in turns[0])


def test_a_named_session_keeps_its_agent(ws: Path) -> None:
    agent = [sys.executable, str(PEERS / "chat_agent.py")]
    done = run(ws, "chat", "-s", "peer", "-p", "hello", "--", *agent)
    assert done.returncode == 0, done.stderr
    again = run(ws, "chat", "-s", "peer", "-p", "/plan")  # no agent given: the session's own
    assert "no longer has session" in again.stderr  # (this agent forgets its sessions)
    assert "echo: /plan" in again.stdout
    other = run(ws, "chat", "-s", "peer", "-p", "hi", "--", sys.executable, "-c", "pass")
    assert other.returncode == 2 and "was made with" in other.stderr


def test_history_shows_each_message_whole(ws: Path) -> None:
    agent = [sys.executable, str(PEERS / "chat_agent.py")]
    done = run(ws, "chat", "-s", "long", "-p", "long 120", "--", *agent)
    assert done.returncode == 0, done.stderr
    history = run(ws, "sessions", "history", "long")
    assert history.returncode == 0, history.stderr
    [line] = [line for line in history.stdout.splitlines() if "\tagent\t" in line]
    assert len(line) > 1000 and "…" not in line
    assert re.findall(r"w\d{5}", line) == [f"w{i:05d}" for i in range(1, 121)]
    assert line.rstrip(" ⏎").endswith("END-OF-MESSAGE")  # to its last word


def descendants(pid: int) -> set[int]:
    """Children, theirs, and so on (`/run` runs its command under `sh -c`)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        kids = children(todo.pop()) - found
        found |= kids
        todo.extend(kids)
    return found


def start_holding(ws: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    """A chat whose turn runs `sleep 30` in a client terminal; returns it and the sleep's pid."""
    chat = subprocess.Popen(
        [*ACPSTACK, "chat", *args, "-p", "/run sleep 30", "--approve-all"],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # A process gives no event when it starts a child: look, with a deadline.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        sleeps = [p for p in descendants(chat.pid) if cmdline(p).startswith("sleep 30")]
        if sleeps:
            return chat, sleeps[0]
        assert chat.poll() is None, chat.communicate()
        time.sleep(0.05)
    chat.kill()
    out, err = chat.communicate()  # (and no process or pipe left behind)
    raise AssertionError(f"the holding chat never ran its command: {out} {err}")


def test_one_writer_per_session(ws: Path) -> None:
    holder, sleep = start_holding(ws, "-s", "shared")
    try:
        second = run(ws, "chat", "-s", "shared", "-p", "/plan")
        assert second.returncode == 1
        assert (
            f"the session 'shared' of {ws} is open in another acpstack chat (pid {holder.pid})"
            in second.stderr
        )
        [record] = [r for r in records(ws) if r["name"] == "shared"]
        by_id = run(ws, "chat", "--session", record["session_id"], "-p", "/plan")
        assert by_id.returncode == 1 and "is open in another acpstack chat" in by_id.stderr
        deleting = run(ws, "sessions", "delete", "shared")
        assert deleting.returncode == 1 and "open in a chat" in deleting.stderr
    finally:
        holder.send_signal(signal.SIGKILL)  # no clean-up at all: the kernel drops the lock
        holder.communicate()
        os.kill(sleep, signal.SIGKILL)  # what a killed chat cannot end: its client terminal
    assert_ended({sleep})
    after = run(ws, "chat", "-s", "shared", "-p", "/plan")
    assert after.returncode == 0, after.stderr
    [record_after] = [r for r in records(ws) if r["name"] == "shared"]
    assert record_after["session_id"] == record["session_id"]  # the same session goes on


def test_sessions_show_export_delete(ws: Path) -> None:
    done = run(ws, "chat", "-s", "notes", "-p", "/read README.md")
    assert done.returncode == 0, done.stderr
    shown = run(ws, "sessions", "show", "notes")
    assert "name: notes" in shown.stdout and f"cwd: {ws}" in shown.stdout
    exported = run(ws, "sessions", "export", "notes", "--format", "markdown", "-o", "out.md")
    assert exported.returncode == 0, exported.stderr
    markdown = (ws / "out.md").read_text()
    assert (
        "## You\n\n/read README.md" in markdown and "- tool: Read README.md (completed)" in markdown
    )
    data = json.loads(run(ws, "sessions", "export", "notes").stdout)
    assert data["record"]["name"] == "notes" and data["history"][0]["text"] == "/read README.md"
    assert run(ws, "sessions", "delete", "notes").returncode == 0
    for action in ("show", "history", "export", "delete"):
        gone = run(ws, "sessions", action, "notes")
        assert gone.returncode == 4 and "no recorded session 'notes'" in gone.stderr
    assert "notes" not in run(ws, "sessions", "list", "--format", "quiet").stdout


def test_sessions_agent_asks_the_agent(ws: Path) -> None:
    done = run(ws, "chat", "-p", "/plan", "--format", "json")
    session_id = json.loads(done.stdout.splitlines()[-1])["sessionId"]
    listed = run(ws, "sessions", "agent", "--cwd", str(ws))
    assert listed.returncode == 0 and session_id in listed.stdout
    agent = [sys.executable, str(PEERS / "chat_agent.py")]
    unsupported = run(ws, "sessions", "agent", "--", *agent)
    assert unsupported.returncode == 1 and "Traceback" not in unsupported.stderr
    assert "does not list its sessions" in unsupported.stderr


def test_an_unusable_state_directory_is_one_line(ws: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the state directory should be")
    env = dict(os.environ, XDG_STATE_HOME=str(blocked))
    named = subprocess.run(
        [*ACPSTACK, "chat", "-s", "x", "-p", "/plan"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert named.returncode == 1 and "Traceback" not in named.stderr
    assert "cannot use the state directory" in named.stderr and "set XDG_STATE_HOME" in named.stderr
    plain = subprocess.run(
        [*ACPSTACK, "chat", "-p", "/plan"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 0, plain.stderr  # works, and says what it cannot keep
    assert "this chat is not recorded" in plain.stderr
    listing = subprocess.run(
        [*ACPSTACK, "sessions"], cwd=ws, env=env, capture_output=True, text=True, timeout=60
    )
    assert listing.returncode == 1 and len(listing.stderr.strip().splitlines()) == 1
    assert "cannot use the state directory" in listing.stderr


def test_a_home_that_is_not_a_directory_is_one_line_each(ws: Path, tmp_path: Path) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a directory")
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    agent = [sys.executable, str(PEERS / "chat_agent.py")]
    done = subprocess.run(
        [*ACPSTACK, "chat", "-p", "hi", "--", *agent],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr  # no config, no records: the chat still works
    assert "echo: hi" in done.stdout and "Traceback" not in done.stderr
    assert done.stderr.count("cannot use the state directory") == 1
