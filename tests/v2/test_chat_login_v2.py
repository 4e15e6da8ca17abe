"""Terminal login in `acpstack chat` with a v2-only agent (in tmux, a real terminal): the
chat advertises v2's `capabilities.auth.terminal`, offers the agent's terminal method
(v2's `methodId`, its `env` a list of name/value pairs) with the command it runs, runs that
command in the user's terminal, and goes on with the session once it succeeded; an agent
whose methods are all of types the chat does not know gets a clear message. Real
processes: the chat, and the agent it starts (tests/v2/peers/login_agent_v2.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli" / "peers"))
from term import HAVE_TMUX, Tmux  # noqa: E402

pytestmark = pytest.mark.timeout(120, func_only=True)
PEER = str(Path(__file__).resolve().parent / "peers" / "login_agent_v2.py")
CHAT = [sys.executable, "-m", "acpstack", "chat"]


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        "ACPSTACK_STORE": str(tmp_path / "sessions.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
        "LOGIN_MARKER": str(tmp_path / "logged-in"),
    }


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Tmux]:
    if not HAVE_TMUX:
        pytest.skip("tmux is not installed")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    term = Tmux(tmp_path, width=250, height=40)  # the command line is shown whole
    term.start([*CHAT, "--", sys.executable, PEER, "terminal"], workspace, environment(tmp_path))
    yield term
    term.close()


def test_a_v2_terminal_login_runs_in_the_terminal_and_the_session_goes_on(
    chat: Tmux, tmp_path: Path
) -> None:
    screen = chat.wait_for("choose a method")
    assert "(ACP v2)" in screen  # the agent speaks v2 only
    # Offered only to a client that advertised v2's auth.terminal.
    assert "[1] Log in in the terminal" in screen
    assert f"runs in this terminal: {sys.executable} {PEER} terminal --login" in screen
    chat.keys("1")
    chat.wait_for("password:")
    assert "welcome to the v2 login" in chat.screen()  # the method's env reached the program
    chat.type("sesame")
    chat.keys("Enter")
    chat.wait_for(lambda s: s.rstrip().endswith(">"))
    assert (tmp_path / "logged-in").exists()
    screen = chat.submit("hi")
    assert "login done" in screen and "logged in; asking for the session again" in screen
    assert "hello, v2 user" in screen


def test_a_failed_v2_login_is_said_and_the_chat_ends(chat: Tmux, tmp_path: Path) -> None:
    chat.wait_for("choose a method")
    chat.keys("1")
    chat.wait_for("password:")
    chat.type("wrong")
    chat.keys("Enter")
    screen = chat.wait_for("the login ended with exit code 1")
    assert chat.exit_code() != 0
    assert not (tmp_path / "logged-in").exists()
    assert "wrong password" in screen


def run_chat(tmp_path: Path, mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHAT, "-p", "hi", *args, "--", sys.executable, PEER, mode],
        env=dict(os.environ, **environment(tmp_path)),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_headless_v2_terminal_login_needs_a_terminal(tmp_path: Path) -> None:
    done = run_chat(tmp_path, "terminal", "--auth", "terminal-login")
    assert done.returncode != 0
    assert "the login 'Log in in the terminal' needs a terminal" in done.stderr
    assert f"{PEER} terminal --login" in done.stderr
    assert not (tmp_path / "logged-in").exists()


@pytest.mark.parametrize("auth", [(), ("--auth", "pigeon")])
def test_v2_auth_methods_all_unsupported_get_a_clear_message(
    tmp_path: Path, auth: tuple[str, ...]
) -> None:
    done = run_chat(tmp_path, "unsupported", *auth)
    assert done.returncode == 1, done.stderr
    assert (
        "the agent requires authentication, and this chat can use none of its methods: "
        "pigeon (Pigeon; type _carrier_pigeon)" in done.stderr
    )
    assert "log in with the agent's own tools" in done.stderr
    assert "Authentication required (code -32000)" not in done.stderr
