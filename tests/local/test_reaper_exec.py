"""A sweep for a terminal's escapees and a process caught in the middle of `exec`.

Between `exec` giving a process the new program's memory and setting up its arguments and
environment, /proc shows neither, even though the parent already saw the `exec` succeed:
an escapee whose parent started it and exited at once can be in that state when the sweep
looks (it was then missed: tests/local/test_reaper.py failed that way under load). The
kernel cannot be held in that state on demand, so the first test makes /proc show it for
a real marked process (the reads of its environment and arguments are patched); the
others check real processes that show no environment for good are not waited for.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from acpstack.local import MARKER_VARIABLE, _reaper
from acpstack.local._reaper import end_marked, marker_needle

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and pidfds are Linux"),
]

T = 20.0
MARK = "test-exec:1"
ESCAPE = (  # a process in a session of its own, whose parent exits at once (not our child)
    "import subprocess as s, sys; "
    "print(s.Popen(sys.argv[1:], start_new_session=True, stdout=s.DEVNULL, "
    "stderr=s.DEVNULL).pid)"
)


def escape(*argv: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", ESCAPE, *argv],
        env={**os.environ, MARKER_VARIABLE: MARK},
        capture_output=True,
        text=True,
        timeout=T,
        check=True,
    )
    return int(done.stdout)


async def exited(pid: int) -> None:
    """Wait on the loop (no polling) until the process exited: its pidfd turns readable."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await asyncio.wait_for(done, T)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def kill(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


async def test_a_marked_process_seen_in_exec_is_ended_once_its_exec_is_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pid = await asyncio.to_thread(escape, "sleep", "300")
    try:
        reads = {"environ": 0}
        in_exec_reads = 3  # the first three reads of its environment find it in exec
        real = _reaper._read

        def read(of: int, name: str) -> bytes | None:
            if of == pid and name in ("environ", "cmdline") and reads["environ"] < in_exec_reads:
                if name == "environ":
                    reads["environ"] += 1
                return b""  # what /proc shows of a process in the middle of exec
            return real(of, name)

        monkeypatch.setattr(_reaper, "_read", read)
        ended = await asyncio.wait_for(end_marked(marker_needle(MARK), exclude=(), grace=T), T)
        assert reads["environ"] == in_exec_reads  # it was asked again until its exec was over
        assert ended == 1
        await exited(pid)
    finally:
        kill(pid)


async def test_a_process_with_no_environment_is_not_taken_for_one_in_exec() -> None:
    # started with an empty environment; it says so once it runs (its exec is over)
    script = (
        "import subprocess as s, sys; "
        "p = s.Popen([sys.executable, '-c', 'print(1, flush=True); import time; time.sleep(300)'], "
        "env={}, start_new_session=True, stdout=s.PIPE, stderr=s.DEVNULL); "
        "p.stdout.readline(); print(p.pid)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=T, check=True
    )
    pid = int(done.stdout)
    try:
        assert _reaper._read(pid, "environ") == b""
        assert _reaper._carries(pid, marker_needle(MARK)) is False  # answered, not "ask again"
    finally:
        kill(pid)


async def test_a_zombie_is_not_taken_for_a_process_in_exec() -> None:
    child = subprocess.Popen(["true"])
    try:
        await exited(child.pid)  # exited, not reaped yet: a zombie
        assert _reaper._read(child.pid, "stat") is not None
        assert _reaper._carries(child.pid, marker_needle(MARK)) is False
    finally:
        child.wait()
