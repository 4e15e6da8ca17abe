"""SIGTERM and SIGHUP end `acpstack chat` (and `acpstack demo`) like quitting: the turn is
cancelled, the client's terminals and the agent are ended, the exit code is 128 + signal.
Real processes: the chat, an agent that ignores the end of its stdin (peers/signal_agent.py),
the `sleep` it runs in a client terminal; interactive runs in a pseudo-terminal."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from procs import alive, assert_ended, children, cmdline  # noqa: E402
from rendezvous import Rendezvous  # noqa: E402
from term import PROMPT  # noqa: E402

CHAT = [sys.executable, "-m", "acpstack", "chat"]
SIGNAL_AGENT = [sys.executable, str(PEERS / "signal_agent.py")]
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])


@pytest.fixture
def rendezvous(tmp_path: Path) -> Iterator[Rendezvous]:
    meeting = Rendezvous(tmp_path)
    yield meeting
    meeting.close()


@pytest.fixture
def leftovers() -> Iterator[set[int]]:
    """Pids a test found; whatever still runs at the end is killed (a failing test leaves nothing)."""
    pids: set[int] = set()
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def agent_and_terminal(
    rendezvous: Rendezvous, chat_pid: int, leftovers: set[int]
) -> tuple[int, int]:
    """Wait until the agent runs `sleep` in a client terminal; returns (agent pid, sleep pid)."""
    agent = rendezvous.expect("terminal")
    leftovers.add(agent)
    [terminal] = children(chat_pid) - {agent}
    leftovers.add(terminal)
    # Its command line can still be empty for a moment right after exec: poll, with a deadline.
    deadline = time.monotonic() + 10
    while not cmdline(terminal) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cmdline(terminal).startswith("sleep 600"), cmdline(terminal)
    assert alive(agent) and alive(terminal)
    return agent, terminal


def env(rendezvous: Rendezvous, tmp_path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        **rendezvous.env,
        ACPSTACK_STORE=str(tmp_path / "sessions.db"),
        TERM="xterm",
        NO_COLOR="1",
        XDG_STATE_HOME=str(tmp_path / "state"),
        PROMPT_TOOLKIT_NO_CPR="1",  # pexpect is no terminal: it answers no cursor position request
    )


@SIGNALS
@pytest.mark.parametrize("mode", [["-p", "go"], ["-p", "go", "--json"]], ids=["headless", "json"])
def test_headless(
    tmp_path: Path, rendezvous: Rendezvous, leftovers: set[int], sig: int, mode: list[str]
) -> None:
    chat = subprocess.Popen(
        [*CHAT, *mode, "--", *SIGNAL_AGENT],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env(rendezvous, tmp_path),
    )
    leftovers.add(chat.pid)
    try:
        agent, terminal = agent_and_terminal(rendezvous, chat.pid, leftovers)
        chat.send_signal(sig)
        rendezvous.expect("cancelled")  # the agent was told: session/cancel
        _, stderr = chat.communicate(timeout=20)
    finally:
        chat.kill()
        chat.communicate()
    assert chat.returncode == 128 + sig, stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert_ended({agent, terminal})


def spawn_in_terminal(
    args: list[str], tmp_path: Path, rendezvous: Rendezvous
) -> tuple[pexpect.spawn, io.StringIO]:
    seen = io.StringIO()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "acpstack", *args],
        cwd=str(tmp_path),
        env=env(rendezvous, tmp_path),
        encoding="utf-8",
        timeout=20,
        dimensions=(50, 160),
    )
    child.logfile_read = seen
    return child, seen


@SIGNALS
def test_interactive(tmp_path: Path, rendezvous: Rendezvous, leftovers: set[int], sig: int) -> None:
    child, seen = spawn_in_terminal(["chat", "--", *SIGNAL_AGENT], tmp_path, rendezvous)
    leftovers.add(child.pid)
    try:
        child.expect(PROMPT)
        child.sendline("go")
        agent, terminal = agent_and_terminal(rendezvous, child.pid, leftovers)
        child.expect("sleep 600")  # the tool call is on screen (a live line)
        os.kill(child.pid, sig)
        rendezvous.expect("cancelled")
        child.expect(pexpect.EOF)
        assert child.wait() == 128 + sig, seen.getvalue()
        assert "Traceback" not in seen.getvalue()
        assert_ended({agent, terminal})
    finally:
        child.close(force=True)


def echo_on(fd: int) -> bool:
    return bool(termios.tcgetattr(fd)[3] & termios.ECHO)


def test_interactive_at_the_prompt_gives_the_terminal_back(
    tmp_path: Path, rendezvous: Rendezvous, leftovers: set[int]
) -> None:
    child, seen = spawn_in_terminal(["chat", "--", *SIGNAL_AGENT], tmp_path, rendezvous)
    leftovers.add(child.pid)
    # Like the user's shell, hold the terminal open: its modes outlive the chat.
    terminal = os.open(os.readlink(f"/proc/{child.pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
    try:
        child.expect(PROMPT)
        [agent] = children(child.pid)
        leftovers.add(agent)
        deadline = time.monotonic() + 10  # the line editor switches echo off as it starts
        while echo_on(terminal) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not echo_on(terminal)
        child.kill(signal.SIGTERM)
        assert_ended({child.pid, agent})  # (our open terminal keeps the chat's output from ending)
        assert echo_on(terminal)  # what the line editor switched off is back
        os.close(terminal)
        terminal = -1
        child.expect(pexpect.EOF)
        assert child.wait() == 128 + signal.SIGTERM, seen.getvalue()
        assert "Traceback" not in seen.getvalue()
    finally:
        if terminal >= 0:
            os.close(terminal)
        child.close(force=True)


def test_interactive_at_the_prompt_when_the_terminal_hangs_up(
    tmp_path: Path, rendezvous: Rendezvous, leftovers: set[int]
) -> None:
    """The real hang-up: the terminal goes away (its master side is closed)."""
    master, slave = pty.openpty()
    errors = (tmp_path / "stderr").open("w+")
    chat = subprocess.Popen(
        [*CHAT, "--", *SIGNAL_AGENT],
        stdin=slave,
        stdout=slave,
        stderr=errors,
        cwd=tmp_path,
        env=env(rendezvous, tmp_path),
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )  # our controlling terminal
    os.close(slave)
    leftovers.add(chat.pid)
    try:
        read_until(master, b"\x1b[?2004h")  # the prompt is up: it asked for bracketed paste
        os.write(master, b"go\n")
        agent, terminal = agent_and_terminal(rendezvous, chat.pid, leftovers)
    finally:
        os.close(master)  # hang up: the kernel sends SIGHUP to the chat
    try:
        code = chat.wait(20)
    finally:
        chat.kill()
        chat.wait()
    errors.seek(0)
    stderr = errors.read()
    errors.close()
    assert code == 128 + signal.SIGHUP, stderr
    assert "Traceback" not in stderr, stderr
    assert_ended({agent, terminal})


def read_until(fd: int, wanted: bytes, timeout: float = 20) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout
    while wanted not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"{wanted!r} not seen within {timeout} s; got {seen[-500:]!r}"
        seen += os.read(fd, 65536)
    return seen


def test_demo_waiting_for_a_permission_answer(
    tmp_path: Path, rendezvous: Rendezvous, leftovers: set[int]
) -> None:
    child, seen = spawn_in_terminal(["demo"], tmp_path, rendezvous)
    leftovers.add(child.pid)
    project: Path | None = None
    try:
        child.expect(r"a copy of a sample project is in (\S+)")
        project = Path(child.match.group(1))
        child.expect("choose 1-")
        [agent] = children(child.pid)
        leftovers.add(agent)
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
        assert child.wait() == 128 + signal.SIGTERM, seen.getvalue()
        assert "Traceback" not in seen.getvalue()
        assert_ended({agent})
    finally:
        child.close(force=True)
        if project is not None and project.parent.name.startswith("acpstack-demo-"):
            shutil.rmtree(project.parent, ignore_errors=True)
