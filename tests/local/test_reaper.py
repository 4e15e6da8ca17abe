"""Processes that leave their terminal's process group, and a subreaper's orphans.

The subreaper tests run helpers/subreaper_client.py in a process of its own (on the
stdlib loop and on uvloop), so the test runner never becomes a subreaper for the other
tests. The others run here: ending marked processes needs no subreaper.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acpstack.local import MARKER_VARIABLE, TerminalManager, become_subreaper, is_subreaper

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and pidfds are Linux"),
]

PY = sys.executable
SESSION = "s"
T = 20.0
HELPER = Path(__file__).parent / "helpers" / "subreaper_client.py"
ESCAPE = (  # detached from the output pipe, so the terminal's exit is seen at once
    "import subprocess as s; "
    "print(s.Popen(['sleep', '300'], start_new_session=True, stdout=s.DEVNULL, stderr=s.DEVNULL).pid)"
)
LOOPS = ["asyncio"]
try:
    import uvloop  # noqa: F401

    LOOPS.append("uvloop")
except ImportError:  # the `fast` extra is optional
    pass


@pytest.fixture
async def manager() -> AsyncIterator[TerminalManager]:
    m = TerminalManager(kill_grace_seconds=1.0)
    try:
        yield m
    finally:
        await asyncio.wait_for(m.aclose(), T)


async def exited(pid: int, timeout: float = T) -> None:
    """Wait on the loop (no polling) until the process exited: its pidfd turns readable."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await asyncio.wait_for(done, timeout)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def escapee(manager: TerminalManager, *wrapper: str) -> tuple[str, int]:
    """A terminal that starts a process in a session of its own, prints its pid and exits."""
    argv = [*wrapper, PY, "-c", ESCAPE]
    tid = await manager.create(SESSION, argv[0], argv[1:])
    await asyncio.wait_for(manager.wait_for_exit(SESSION, tid), T)
    return tid, int(manager.output(SESSION, tid).output)


# -- here: the marker ---------------------------------------------------------------------


async def test_release_ends_what_left_the_group(manager: TerminalManager) -> None:
    tid, pid = await escapee(manager)
    assert running(pid)  # the exit of its terminal left it behind, in a session of its own
    assert os.getsid(pid) == pid
    await asyncio.wait_for(manager.release(SESSION, tid), T)
    await exited(pid)
    assert not running(pid)


async def test_kill_ends_what_left_the_group_and_keeps_the_terminal(
    manager: TerminalManager,
) -> None:
    tid, pid = await escapee(manager)
    await asyncio.wait_for(manager.kill(SESSION, tid), T)
    await exited(pid)
    assert not running(pid)
    assert manager.output(SESSION, tid).output.strip() == str(pid)


async def test_a_process_that_escapes_while_the_terminal_ends_is_ended_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On SIGTERM the command waits until the first sweep for escapees is over (the test
    # says so through a FIFO), starts a process in a session of its own and exits: only
    # the sweep after the group is gone can find it. Nothing depends on timing: the grace
    # before SIGKILL is longer than the test's waits (the command exits by itself, so
    # nothing waits for the grace to run out).
    script = (
        "import os, signal, subprocess as s, sys\n"
        "def escape(*_):\n"
        "    os.read(os.open(sys.argv[1], os.O_RDONLY), 1)\n"
        "    p = s.Popen(['sleep', '300'], start_new_session=True, stdout=s.DEVNULL, stderr=s.DEVNULL)\n"
        "    print(p.pid, flush=True)\n"
        "    os._exit(0)\n"
        "signal.signal(signal.SIGTERM, escape)\n"
        "print('ready', flush=True)\n"
        "signal.pause()\n"
    )
    manager = TerminalManager(kill_grace_seconds=3 * T)
    sweeps: list[str] = []
    swept = asyncio.Event()
    end_escapees = manager._end_escapees

    async def sweep(terminal: Any) -> None:
        await end_escapees(terminal)
        sweeps.append(terminal.id)
        swept.set()

    monkeypatch.setattr(manager, "_end_escapees", sweep)
    go = tmp_path / "go"
    os.mkfifo(go)
    held = os.open(go, os.O_RDWR)  # the command's open never waits for a writer
    released = False
    try:
        tid = await manager.create(SESSION, PY, ["-c", script, str(go)])
        await asyncio.wait_for(manager._wait_for_output(SESSION, tid, lambda t: t == "ready\n"), T)
        kill = asyncio.ensure_future(manager.kill(SESSION, tid))
        await asyncio.wait_for(swept.wait(), T)
        assert sweeps == [tid] and not kill.done()  # the first sweep found nothing to end
        os.write(held, b"!")  # now escape
        released = True
        await asyncio.wait_for(kill, T)
        assert sweeps == [tid, tid]
        text = manager.output(SESSION, tid).output
        assert text.startswith("ready\n") and text.count("\n") == 2, text
        late = int(text.split()[1])
        await exited(late)
        assert not running(late)
    finally:
        if not released:  # failed before: let the command go on rather than wait for SIGKILL
            os.write(held, b"!")
        os.close(held)
        await asyncio.wait_for(manager.aclose(), T)


async def test_only_the_terminals_own_processes_are_ended(manager: TerminalManager) -> None:
    first, mine = await escapee(manager)
    _, other_terminals = await escapee(manager)
    # an unrelated process (started here, unmarked) and one that drops the marker
    unrelated = subprocess.Popen(["sleep", "300"], start_new_session=True)
    _, unmarked = await escapee(manager, "env", "-u", MARKER_VARIABLE)
    try:
        await asyncio.wait_for(manager.release(SESSION, first), T)
        await exited(mine)
        assert not running(mine)
        assert running(other_terminals) and running(unrelated.pid) and running(unmarked)
    finally:
        unrelated.kill()
        unrelated.wait()
        os.kill(unmarked, 9)  # the documented limit: found only by end_orphans (below)


async def test_the_marker_cannot_be_overridden_by_the_request(manager: TerminalManager) -> None:
    script = f"import os; print(os.environ[{MARKER_VARIABLE!r}])"
    tid = await manager.create(SESSION, PY, ["-c", script], env={MARKER_VARIABLE: "forged"})
    await asyncio.wait_for(manager.wait_for_exit(SESSION, tid), T)
    token, _, terminal = manager.output(SESSION, tid).output.strip().partition(":")
    assert terminal == tid and len(token) == 16


# -- in a subprocess: the subreaper ---------------------------------------------------------


def run_client(scenario: str, loop: str) -> dict[str, Any]:
    done = subprocess.run(
        [PY, "-W", "error", str(HELPER), scenario, loop],
        capture_output=True,
        text=True,
        timeout=45,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no warning, e.g. asyncio's "Unknown child process pid"
    result: dict[str, Any] = json.loads(done.stdout)
    assert result.pop("became") is True
    return result


@pytest.mark.parametrize("loop", LOOPS)
def test_a_subreaper_adopts_the_escapee_and_release_reaps_it(loop: str) -> None:
    result = run_client("release", loop)
    assert result == {"adopted": True, "gone_at_once": True, "zombies": []}


@pytest.mark.parametrize("loop", LOOPS)
def test_kill_and_aclose_end_escapees_also_stubborn_ones(loop: str) -> None:
    result = run_client("kill_and_aclose", loop)
    after_kill = result["after_kill"]
    assert after_kill["gone"] is True and after_kill["output"] == after_kill["pid"]
    assert result["aclose_gone"] is True
    assert result["zombies"] == []


@pytest.mark.parametrize("loop", LOOPS)
def test_end_orphans_ends_the_rest_and_keeps_what_we_own(loop: str) -> None:
    result = run_client("shutdown", loop)
    assert result["marked_gone"] is True
    assert result["unmarked_survived_release"] is True  # the documented limit of the marker
    assert result["quick_was_zombie"] is True  # ...and of the subreaper until end_orphans
    assert result["ended"] == result["expected_ended"]
    assert result["unmarked_gone"] is True and result["quick_gone"] is True
    assert result["kept_alive"] is True
    assert result["kept_returncode"] == -9  # asyncio still got its own child's status
    assert result["zombies"] == [] and result["again"] == []


def test_the_test_runner_is_not_a_subreaper() -> None:
    assert is_subreaper() is False


def test_no_subreaper_outside_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    # Mocked: there is no other system here; the platform check is all that runs.
    monkeypatch.setattr(sys, "platform", "darwin")
    assert become_subreaper() is False
    assert is_subreaper() is False
