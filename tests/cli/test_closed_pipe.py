"""A command whose reader went away (`acpstack check agent --list | head`) ends quietly:
no traceback on stderr, the exit code a shell shows for a tool ended by SIGPIPE. Real
processes, with stdout a real pipe whose read end is closed before they write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120, func_only=True)


@pytest.mark.parametrize(
    "args",
    [
        ["check", "agent", "--list"],
        ["agents"],
        ["agents", "search", "code"],
        ["sessions", "list", "--all"],
    ],
    ids=" ".join,
)
def test_a_list_into_a_closed_pipe_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    env = dict(
        os.environ,
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        ACPSTACK_STORE=str(tmp_path / "sessions.db"),
    )
    if args[0] == "sessions":  # a recorded session, so that there is a row to print
        seed = [sys.executable, "-m", "acpstack", "chat", "-p", "hello", "--"]
        seed += [sys.executable, "-m", "acpstack", "agent"]
        done = subprocess.run(seed, env=env, cwd=tmp_path, capture_output=True, timeout=90)
        assert done.returncode == 0, done.stderr
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes its first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "acpstack", *args],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=90,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141
