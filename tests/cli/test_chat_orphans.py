"""Nothing outlives `acpstack chat`: a process the agent started in a session of its own
(setsid, outside its process group) is re-parented to the chat (a child subreaper) and
ended when the chat exits. And the agent's command line is shown without its secrets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from procs import alive, assert_ended  # noqa: E402

CHAT = [sys.executable, "-m", "acpstack", "chat"]


def test_a_setsid_escapee_of_the_agent_is_ended_with_the_chat(tmp_path: Path) -> None:
    pid_file = tmp_path / "orphan.pid"
    env = dict(os.environ, ORPHAN_PID_FILE=str(pid_file), ACPSTACK_STORE=str(tmp_path / "s.db"))
    done = subprocess.run(
        [*CHAT, "-p", "go", "--", sys.executable, str(PEERS / "orphan_agent.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    orphan = int(pid_file.read_text())
    try:
        assert done.returncode == 0, done.stderr
        assert "left one" in done.stdout
        assert_ended({orphan})
    finally:
        if alive(orphan):
            os.kill(orphan, signal.SIGKILL)


def test_a_key_in_the_agent_command_line_is_not_shown(tmp_path: Path) -> None:
    agent = [
        sys.executable,
        "-c",
        "import sys; sys.exit(3)",
        "--base-url",
        "https://user:SECRETKEY@example.com/v1?api_key=OTHERKEY",
    ]
    done = subprocess.run(
        [*CHAT, "-p", "go", "--", *agent],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env=dict(os.environ, ACPSTACK_STORE=str(tmp_path / "s.db")),
    )
    assert done.returncode != 0
    assert "the agent stopped" in done.stderr and "exited with code 3" in done.stderr, done.stderr
    assert (
        "SECRETKEY" not in done.stderr + done.stdout and "OTHERKEY" not in done.stderr + done.stdout
    )
