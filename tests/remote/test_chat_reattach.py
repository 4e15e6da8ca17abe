"""`acpstack chat --url` killed (SIGKILL) in the middle of a turn and started again with
the same `-s NAME`: the new chat shows the whole turn, the words streamed while no chat
was there included. Real processes: `acpstack serve` with an agent whose sessions persist
in SQLite, a chat on a pipe that is killed, and the new chat in a real terminal (tmux)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _serving import PEERS, serve_process

sys.path.insert(0, str(Path(__file__).parents[1] / "cli" / "peers"))
from term import HAVE_TMUX, Tmux  # noqa: E402

ACPSTACK = [sys.executable, "-m", "acpstack"]
WORDS = 60
pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed"),
]


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_a_chat_killed_mid_turn_and_started_again_shows_the_whole_turn(
    scheme: str, tmp_path: Path
) -> None:
    env = {
        "ACPSTACK_TEST_STORE": str(tmp_path / "sessions.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    with serve_process("--agent", f"{PEERS / 'slow_agent.py'}:SlowAgent", env=env) as served:
        url = served.url.replace("http://", f"{scheme}://")
        chat = subprocess.Popen(
            [*ACPSTACK, "chat", "--url", url, "-s", "work", "-p", f"slow {WORDS}"],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )
        assert chat.stdout is not None
        seen = b""
        while b"w5 " not in seen:  # the turn is streaming
            data = os.read(chat.stdout.fileno(), 4096)
            assert data, chat.communicate()
            seen += data
        chat.send_signal(signal.SIGKILL)
        chat.communicate()
        assert f"w{WORDS} ".encode() not in seen  # it died before the end of the turn
        term = Tmux(tmp_path, 100, height=30)
        try:
            term_env = {**env, "PATH": os.environ["PATH"], "TERM": "xterm-256color"}
            term.start([*ACPSTACK, "chat", "--url", url, "-s", "work"], tmp_path, term_env)
            last = re.compile(rf"\bw{WORDS}\b")
            screen = term.wait_for(lambda text: last.search(text) is not None, timeout=90)
            words = re.findall(r"\bw(\d+)\b", screen)
            assert words == [str(i) for i in range(1, WORDS + 1)], screen  # whole, once
            assert screen.count(f"you: slow {WORDS}") == 1, screen
        finally:
            term.close()
