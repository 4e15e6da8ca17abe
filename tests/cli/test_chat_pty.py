"""`acpstack chat` in a real terminal (tmux), driving the real reference agent process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "peers"))
from term import HAVE_TMUX, Tmux  # noqa: E402

pytestmark = pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed")
CHAT = [sys.executable, "-m", "acpstack", "chat"]


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Tmux]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    env = {
        "ACPSTACK_STORE": str(tmp_path / "sessions.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
    }
    term = Tmux(tmp_path, width=120, height=50)
    term.start(CHAT, workspace, env)
    term.wait_for("connected to acpstack reference agent")
    term.wait_for(lambda s: s.rstrip().endswith(">"))
    yield term
    term.close()


def send(term: Tmux, line: str) -> str:
    """Type a prompt, Enter, and wait for the next prompt; returns the screen."""
    return term.submit(line)


def test_the_agents_help_and_the_built_in_help(chat: Tmux) -> None:
    screen = send(chat, "/help")  # the agent advertises /help: it is the agent's to answer
    assert "scripted offline agent" in screen and "/edit FILE OLD NEW" in screen
    screen = send(chat, "//help")  # the built-ins stay reachable
    assert "Built-in commands" in screen and "//help" in screen and "/mode [ID]" in screen
    assert "Replace text in a file" in screen  # and the agent's own are listed


def test_read_shows_the_file_once_and_plan_says_what_it_has(chat: Tmux) -> None:
    screen = send(chat, "/read README.md")
    assert screen.count("# Readme") == 1  # the tool's copy of the file is not shown again
    assert screen.count("Read README.md") == 1  # one line for the tool call
    screen = send(chat, "/plan")
    assert "There is no plan yet" in screen


def test_mode_and_config_show_what_session_new_returned(chat: Tmux) -> None:
    screen = send(chat, "/mode")
    assert "* code" in screen and "None" not in screen
    screen = send(chat, "/config")
    assert "mode = code" in screen
    screen = send(chat, "/mode bogus")  # a failing command is reported; the chat goes on
    assert "unknown mode 'bogus'" in screen
    screen = send(chat, "/mode ask")
    screen = send(chat, "/edit README.md Readme Hello")
    assert "ask" in screen and "mode" in screen
    assert (Path(chat.socket).parent / "ws" / "README.md").read_text() == "# Readme\n"


def test_a_permission_prompt_answered_by_one_key(chat: Tmux) -> None:
    workspace = Path(chat.socket).parent / "ws"
    chat.type("/edit README.md Readme Hello")
    chat.keys("Enter")
    screen = chat.wait_for("choose 1-4")
    assert screen.count("+# Hello") == 1  # the diff, once (not again in the question)
    chat.keys("3")  # reject: one key, no Enter
    chat.wait_for(lambda s: s.rstrip().endswith(">") and "unchanged" in s)
    assert (workspace / "README.md").read_text() == "# Readme\n"
    chat.type("/edit README.md Readme Hello")
    chat.keys("Enter")
    chat.wait_for(lambda s: s.count("choose 1-4") == 2)
    chat.keys("1")  # allow once
    chat.wait_for("Edited README.md")
    assert (workspace / "README.md").read_text() == "# Hello\n"


def test_ctrl_c_cancels_a_long_turn_and_the_chat_goes_on(chat: Tmux) -> None:
    chat.type("/run sleep 60")
    chat.keys("Enter")
    chat.wait_for("choose 1-4")
    chat.keys("1")
    # "sleep 60" is on the screen from the start: wait for the command to be running
    chat.wait_for("in progress")
    chat.keys("C-c")
    chat.wait_for("cancelling the turn")
    screen = chat.wait_for(lambda s: s.rstrip().endswith(">") and "turn ended: cancelled" in s)
    assert "Traceback" not in screen
    screen = send(chat, "/read README.md")
    assert "# Readme" in screen
    chat.keys("C-d")
    assert chat.exit_code() == 0


def test_load_shows_the_history_once(chat: Tmux) -> None:
    send(chat, "/read README.md")
    send(chat, "/sessions")
    [session_id] = [line.split()[1] for line in chat.screen().splitlines() if line.startswith("* ")]
    screen = send(chat, "/new")
    assert "new session" in screen
    screen = send(chat, f"/load {session_id}")
    loaded = screen[screen.index(f"loading session {session_id}") :]
    assert loaded.count("you: /read README.md") == 1  # the replayed history, shown once
    assert loaded.count("# Readme") == 1
