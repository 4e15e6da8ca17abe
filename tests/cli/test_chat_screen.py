"""What the chat shows, seen as a user sees it: in a real terminal (tmux) and on a pipe.
The plan is redrawn in place at a terminal and printed once when the turn ends; on a pipe
only what changed is printed after the first plan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from term import HAVE_TMUX, Tmux  # noqa: E402

ACPSTACK = [sys.executable, "-m", "acpstack"]
TASK = ["chat", "-p", "add a note", "--approve-all"]
needs_tmux = pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    monkeypatch.setenv("ACPSTACK_STORE", str(tmp_path / "agent.db"))
    return workspace


def terminal_env() -> dict[str, str]:
    names = ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "ACPSTACK_STORE", "PATH")
    return {**{name: os.environ[name] for name in names}, "TERM": "xterm-256color"}


def run_in_terminal(tmp_path: Path, ws: Path, args: list[str], width: int) -> str:
    term = Tmux(tmp_path, width, height=30)
    try:
        term.start([*ACPSTACK, *args], ws, terminal_env())
        assert term.exit_code(timeout=60) == 0, term.screen()
        return term.screen()
    finally:
        term.close()


@needs_tmux
def test_the_plan_is_redrawn_in_place_at_a_terminal(ws: Path, tmp_path: Path) -> None:
    screen = run_in_terminal(tmp_path, ws, TASK, 80)
    lines = screen.splitlines()
    assert [line.strip() for line in lines].count("plan:") == 1, screen  # not once per update
    steps = ["List the workspace", "Read the README", "Propose an edit", "Run the tests"]
    for step in steps:
        assert [line.strip() for line in lines if step in line] == [f"[x] {step}"], screen
    assert "[~]" not in screen and "[ ]" not in screen  # no stale state left behind


def test_on_a_pipe_only_the_changes_are_printed(ws: Path) -> None:
    done = subprocess.run(
        [*ACPSTACK, *TASK], cwd=ws, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("plan:\n") == 1 and out.count("plan update:\n") == 4
    assert "plan:\n  [~] List the workspace\n  [ ] Read the README\n" in out
    assert "plan update:\n  [x] List the workspace\n  [~] Read the README\n" in out
    assert out.count("Run the tests") == 3  # pending (whole plan), in progress, done


@needs_tmux
def test_a_long_code_line_is_cut_not_wrapped_to_the_first_column(ws: Path, tmp_path: Path) -> None:
    long_line = "value = compute(" + "alpha, " * 20 + "END_OF_LINE)"
    (ws / "long.py").write_text(f"def f():\n    {long_line}\n    return value\n")
    screen = run_in_terminal(tmp_path, ws, ["chat", "-p", "/read long.py"], 60)
    [row] = [line for line in screen.splitlines() if "value = compute(" in line]
    assert row.rstrip().endswith("…") and len(row.rstrip()) <= 60, screen
    assert "END_OF_LINE" not in screen  # cut, and not continued on the next row
    assert not any(line.lstrip().startswith("alpha,") for line in screen.splitlines())
    rows = screen.splitlines()
    index = rows.index(row)
    assert rows[index - 1].strip() == "def f():" and rows[index + 1].strip() == "return value"


@needs_tmux
def test_a_resize_while_a_tool_runs_leaves_no_stale_line(ws: Path, tmp_path: Path) -> None:
    command = "sleep 3  # " + "a comment that makes the tool's title long " * 2
    term = Tmux(tmp_path, 140, height=30)
    try:
        term.start(
            [*ACPSTACK, "chat", "-p", f"/run {command}", "--approve-all"], ws, terminal_env()
        )
        term.wait_for("execute · in progress", timeout=60)  # the live line, 100+ columns
        term._tmux("resize-window", "-t", "chat", "-x", "50")
        assert term.exit_code(timeout=60) == 0, term.screen()
        screen = term.screen()
    finally:
        term.close()
    assert "◐" not in screen and "in progress" not in screen, screen  # no stale half line
    assert screen.count("● Run `sleep 3") == 1


@needs_tmux
def test_the_permission_menu_reads_as_words(ws: Path, tmp_path: Path) -> None:
    term = Tmux(tmp_path, 80, height=30)
    try:
        term.start([*ACPSTACK, "chat"], ws, terminal_env())
        term.wait_for(lambda screen: screen.rstrip().endswith(">"), timeout=60)
        term.type("/edit README.md Readme Hello")
        term.keys("Enter")
        screen = term.wait_for("choose 1-4", timeout=60)
        term.keys("Escape")
        # At the prompt again before Ctrl-D: sent while the chat is between its menu and
        # its prompt, the terminal is in cooked mode, where the line discipline turns ^D
        # into an end-of-file mark; the prompt, which enters raw mode without flushing
        # input, then reads that mark as a NUL byte (Ctrl-@), not Ctrl-D, and the chat
        # waits on (seen on a loaded machine). The prompt is drawn only once raw mode is on.
        term.wait_for(lambda s: "unchanged" in s and s.rstrip().endswith(">"), timeout=60)
        term.keys("C-d")
        assert term.exit_code(timeout=60) == 0
    finally:
        term.close()
    menu = [line.strip() for line in screen.splitlines() if line.strip().startswith("[")]
    assert menu == [
        "[1] Allow (this time)",
        "[2] Always allow",
        "[3] Reject (this time)",
        "[4] Always reject",
    ]
    assert "allow_once" not in screen and "reject_once" not in screen


@needs_tmux
def test_a_cancelled_turn_shows_its_tool_call_ended(ws: Path, tmp_path: Path) -> None:
    # Ctrl-C during a command: the tool call's final state is shown (it used to stay
    # "in progress" forever), before the turn's end.
    term = Tmux(tmp_path, 100, height=30)
    try:
        term.start([*ACPSTACK, "chat", "--approve-all"], ws, terminal_env())
        term.wait_for("connected to", timeout=60)
        term.type("/run sleep 30")
        term.keys("Enter")
        term.wait_for("execute", timeout=60)  # the tool call is shown, its command runs
        term.keys("C-c")
        screen = term.wait_for("[turn ended: cancelled]", timeout=60)
        assert "Run `sleep 30`  execute · cancelled" in screen, screen
        assert screen.index("Cancelled.") < screen.index("[turn ended: cancelled]"), screen
        assert "in_progress" not in screen.split("Cancelled.")[-1], screen
    finally:
        term.close()
