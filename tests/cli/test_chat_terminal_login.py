"""Terminal login in `acpstack chat` (in tmux, a real terminal): the chat advertises
`auth.terminal`, offers the agent's terminal method with the command it runs, runs that
command in the user's terminal with the method's args and env, and goes on with the
session once it succeeded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "peers"))
from term import HAVE_TMUX, Tmux  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed"),
    pytest.mark.timeout(120, func_only=True),
]
AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "login_agent.py")]
CHAT = [sys.executable, "-m", "acpstack", "chat"]


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Tmux]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        "ACPSTACK_STORE": str(tmp_path / "sessions.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
        "LOGIN_MARKER": str(tmp_path / "logged-in"),
    }
    term = Tmux(tmp_path, width=250, height=40)
    term.start([*CHAT, "--", *AGENT], workspace, env)
    yield term
    term.close()


def test_a_terminal_login_runs_in_the_terminal_and_the_session_goes_on(
    chat: Tmux, tmp_path: Path
) -> None:
    screen = chat.wait_for("choose a method")
    assert "[1] Log in in the terminal" in screen
    assert f"runs in this terminal: {AGENT[0]} {AGENT[1]} --login" in screen
    chat.keys("1")
    chat.wait_for("password:")
    screen = chat.screen()
    assert "welcome to the login" in screen  # the method's env reached the program
    chat.type("sesame")
    chat.keys("Enter")
    chat.wait_for(lambda s: s.rstrip().endswith(">"))
    assert (tmp_path / "logged-in").exists()
    screen = chat.submit("hi")
    assert "login done" in screen and "logged in; asking for the session again" in screen
    assert "hello, logged-in user" in screen


def test_a_failed_login_is_said_and_the_chat_ends(chat: Tmux, tmp_path: Path) -> None:
    chat.wait_for("choose a method")
    chat.keys("1")
    chat.wait_for("password:")
    chat.type("wrong")
    chat.keys("Enter")
    screen = chat.wait_for("the login ended with exit code 1")
    assert chat.exit_code() != 0
    assert not (tmp_path / "logged-in").exists()
    assert "wrong password" in screen


def test_headless_terminal_login_needs_a_terminal(tmp_path: Path) -> None:
    env = dict(
        os.environ,
        LOGIN_MARKER=str(tmp_path / "logged-in"),
        ACPSTACK_STORE=str(tmp_path / "sessions.db"),
    )
    done = subprocess.run(
        [*CHAT, "-p", "hi", "--auth", "terminal-login", "--", *AGENT],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "the login 'Log in in the terminal' needs a terminal" in done.stderr
    assert f"{AGENT[1]} --login" in done.stderr
    assert not (tmp_path / "logged-in").exists()


def test_a_profiles_default_args_are_replaced_by_the_logins(tmp_path: Path) -> None:
    config = tmp_path / "config" / "acpstack"
    config.mkdir(parents=True)
    command = ", ".join(f'"{word}"' for word in AGENT)
    (config / "config.toml").write_text(
        f'[agents.needs-login]\ncommand = [{command}]\nargs = ["--serve"]\n'
        'env = { LOGIN_GREETING = "from the profile" }\n'
    )
    env = {
        "ACPSTACK_STORE": str(tmp_path / "sessions.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
        "LOGIN_MARKER": str(tmp_path / "logged-in"),
    }
    term = Tmux(tmp_path, width=250, height=40)
    try:
        term.start([*CHAT, "needs-login"], tmp_path, env)
        screen = term.wait_for("choose a method")
        assert f"runs in this terminal: {AGENT[0]} {AGENT[1]} --login\n" in screen
        term.keys("1")
        term.wait_for("password:")
        # The method's env replaced the profile's.
        assert "welcome to the login" in term.screen()
        term.type("sesame")
        term.keys("Enter")
        term.wait_for("logged in; asking for the session again")
        assert (tmp_path / "logged-in").exists()
    finally:
        term.close()


def test_a_chat_over_url_that_cannot_log_in_says_so(tmp_path: Path) -> None:
    # Over --url the chat does not start the agent, so it cannot run a terminal login and
    # does not advertise one: this agent then offers no method at all.
    env = dict(os.environ, LOGIN_MARKER=str(tmp_path / "logged-in"))
    serve = subprocess.Popen(
        [sys.executable, "-m", "acpstack", "serve", "--port", "0", "--no-token", "--", *AGENT],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stderr is not None
        url = serve.stderr.readline().split(" on ")[1].split(" and ")[0]
        done = subprocess.run(
            [*CHAT, "--url", url, "-p", "hi"],
            env=dict(env, ACPSTACK_STORE=str(tmp_path / "sessions.db")),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        serve.terminate()
        serve.communicate(timeout=20)
    assert done.returncode == 1, done.stderr
    assert "the agent requires authentication but offers no method to log in with" in done.stderr
