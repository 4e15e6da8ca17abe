"""Test helper: a client process that becomes a child subreaper and runs terminals.

Usage: python subreaper_client.py SCENARIO LOOP   (LOOP: asyncio or uvloop)

Runs in its own process so that the test runner never becomes a subreaper. Prints one
JSON object of observations on stdout; logs (WARNING and up) go to stderr, where the test
expects nothing (an asyncio "Unknown child process" warning would show up there).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

from acpstack.local import TerminalManager, become_subreaper, end_orphans, is_subreaper

PY = sys.executable
SESSION = "s"
T = 20.0
# Starts a process in a session of its own, prints its pid, and exits: the process is
# orphaned at once (and adopted by us, the subreaper).
ESCAPE = (  # detached from the output pipe, so the terminal's exit is seen at once
    "import subprocess as s; "
    "print(s.Popen(['sleep', '300'], start_new_session=True, stdout=s.DEVNULL, stderr=s.DEVNULL).pid)"
)
# The same with a process that exits at once; posix_spawn, so that nothing reaps it (a
# Popen object reaps its process when it is collected).
QUICK = "import os; print(os.posix_spawnp('true', ['true'], os.environ, setsid=True))"


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells a process from a later one with the same pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def parent_and_state(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0]


def exists(pid: int, started: str | None) -> bool:
    """Whether that very process is still in the process table (alive or a zombie)."""
    return started is not None and start_time(pid) == started


def zombie_children() -> list[int]:
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and (info := parent_and_state(int(name))) and info == (me, "Z"):
            found.append(int(name))
    return found


async def exited(pid: int, timeout: float = T) -> None:
    """Wait (on the loop, no polling) until the process exited: its pidfd is readable."""
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


async def escapee(manager: TerminalManager, command: list[str]) -> tuple[str, int, str | None]:
    """Run a terminal that leaves a process behind; return (terminal, pid, start time)."""
    tid = await manager.create(SESSION, command[0], command[1:])
    await asyncio.wait_for(manager.wait_for_exit(SESSION, tid), T)
    pid = int(manager.output(SESSION, tid).output)
    return tid, pid, start_time(pid)


async def release(became: bool) -> dict[str, Any]:
    async with TerminalManager(kill_grace_seconds=1.0) as manager:
        tid, pid, started = await escapee(manager, [PY, "-c", ESCAPE])
        # ours now, alive: sleeping, or still starting `sleep` on a loaded machine ("R")
        found = parent_and_state(pid)
        adopted = found is not None and found[0] == os.getpid() and found[1] in "SRD"
        await asyncio.wait_for(manager.release(SESSION, tid), T)
        gone_at_once = not exists(pid, started)  # ended *and* reaped by release itself
    return {
        "became": became,
        "adopted": adopted,
        "gone_at_once": gone_at_once,
        "zombies": zombie_children(),
    }


async def kill_and_aclose(became: bool) -> dict[str, Any]:
    manager = TerminalManager(kill_grace_seconds=1.0)
    # kill: the terminal stays (its output too), what left its group is gone
    tid, first, first_started = await escapee(manager, [PY, "-c", ESCAPE])
    await asyncio.wait_for(manager.kill(SESSION, tid), T)
    after_kill = {
        "gone": not exists(first, first_started),
        "output": manager.output(SESSION, tid).output.strip(),
    }
    # aclose: a terminal still running, which started an escapee that ignores SIGTERM
    script = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(300)'], "
        "start_new_session=True, stdout=subprocess.PIPE); p.stdout.readline(); "
        "print(p.pid, flush=True); time.sleep(300)"
    )
    running = await manager.create(SESSION, PY, ["-c", script])
    text = await asyncio.wait_for(
        manager._wait_for_output(SESSION, running, lambda t: "\n" in t), T
    )
    stubborn = int(text.split()[0])
    stubborn_started = start_time(stubborn)
    await asyncio.wait_for(manager.aclose(), T)
    return {
        "became": became,
        "after_kill": {**after_kill, "pid": str(first)},
        "aclose_gone": not exists(stubborn, stubborn_started),
        "zombies": zombie_children(),
    }


async def shutdown(became: bool) -> dict[str, Any]:
    async with TerminalManager(kill_grace_seconds=1.0) as manager:
        # one escapee keeps the marker, one drops it before leaving
        _, marked, marked_started = await escapee(manager, [PY, "-c", ESCAPE])
        tid, unmarked, unmarked_started = await escapee(
            manager, ["env", "-u", "ACPSTACK_TERMINAL", PY, "-c", ESCAPE]
        )
        # a child we still own (asyncio reaps it): end_orphans must leave it alone
        kept = await asyncio.create_subprocess_exec("sleep", "300")
        # an adopted orphan that exits by itself: a zombie until end_orphans
        _, quick, quick_started = await escapee(manager, [PY, "-c", QUICK])
        await exited(quick)
        quick_was_zombie = parent_and_state(quick) == (os.getpid(), "Z")
        await asyncio.wait_for(manager.release(SESSION, tid), T)
        unmarked_survived_release = exists(unmarked, unmarked_started)
    ended = await asyncio.wait_for(end_orphans(keep=[kept.pid]), T)
    kept_alive = parent_and_state(kept.pid) == (os.getpid(), "S")
    kept.kill()
    returncode = await asyncio.wait_for(kept.wait(), T)
    return {
        "became": became,
        "marked_gone": not exists(marked, marked_started),
        "unmarked_survived_release": unmarked_survived_release,
        "quick_was_zombie": quick_was_zombie,
        "ended": ended,
        "expected_ended": sorted(p for p in (unmarked, quick) if p),
        "unmarked_gone": not exists(unmarked, unmarked_started),
        "quick_gone": not exists(quick, quick_started),
        "kept_alive": kept_alive,
        "kept_returncode": returncode,
        "zombies": zombie_children(),
        "again": await end_orphans(),
    }


async def main(scenario: str) -> None:
    became = become_subreaper()
    assert is_subreaper() == became
    result = await {"release": release, "kill_and_aclose": kill_and_aclose, "shutdown": shutdown}[
        scenario
    ](became)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if sys.argv[2] == "uvloop":
        import uvloop

        uvloop.run(main(sys.argv[1]))
    else:
        asyncio.run(main(sys.argv[1]))
