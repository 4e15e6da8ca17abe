"""Processes that escape their terminal's process group, and orphans adopted by us.

Killing a terminal's process group does not reach a command that moved itself into a
session of its own (``setsid sleep 1000 &``, daemons). Two tools close that gap:

* A marker in the environment. `TerminalManager` starts every terminal with
  ``ACPSTACK_TERMINAL=<manager token>:<terminal id>``; descendants inherit it, whatever
  session or process group they move to. When a terminal is killed or released, every
  process whose ``/proc/PID/environ`` carries its marker is ended (SIGTERM, then SIGKILL
  after the grace time) and, if it is our child, reaped. The marker is read from the
  process table, not only from our children: it works without the subreaper and also
  finds escapees whose parent is still alive. Limits: a process can drop the variable
  (``env -u``, ``env -i``) before it escapes, and ``/proc/PID/environ`` shows the
  environment a process was started with. A process in the middle of ``exec`` shows no
  environment (nor arguments) for a moment, even after its parent saw the ``exec``
  succeed: a sweep waits until such a process shows them. Linux only (no ``/proc``
  elsewhere).
* A child subreaper (Linux: ``prctl(PR_SET_CHILD_SUBREAPER)``). Orphaned descendants are
  re-parented to us instead of to init, so `end_orphans` can end and reap whatever is
  left at shutdown, with or without a marker. Being a subreaper is process-wide: orphans
  that exit on their own stay zombies until `end_orphans` reaps them (a zombie's
  environment is gone, so nothing says whose it was).

Signals go through pidfds where the kernel has them (Linux 5.3+): a pid that was
reused after a check is never signalled. We only ever wait for specific pids, never
``waitpid(-1)``: the exit status of a process asyncio (or anyone) started stays theirs.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import select
import signal
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

__all__ = [
    "MARKER_VARIABLE",
    "become_subreaper",
    "end_marked",
    "end_orphans",
    "is_subreaper",
    "marker_needle",
]

logger = logging.getLogger(__name__)

MARKER_VARIABLE = "ACPSTACK_TERMINAL"
"""The environment variable that marks a terminal's processes (see the module doc)."""

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_ROUNDS = 8  # scans per sweep: ending a process can orphan (or start) others
_KILL_WAIT_SECONDS = 5.0  # how long to wait for exits after SIGKILL
_POLL_SECONDS = 0.02  # only without pidfds (Linux < 5.3), and for processes in exec
_EXEC_WAIT_SECONDS = 10.0  # how long a sweep waits for a process in exec to show its environ
_PF_KTHREAD = 0x00200000  # /proc/PID/stat flags: a kernel thread (never has an environment)


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4  # type: ignore[attr-defined]
    function.restype = ctypes.c_int  # type: ignore[attr-defined]
    return function


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux).

    Returns False where that does not exist (other systems) or failed (logged).
    Process-wide and inherited by nothing: call it once, early, in a client.
    """
    prctl = _prctl()
    if prctl is None:
        return False
    if prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        logger.warning("cannot become a child subreaper: %s", os.strerror(ctypes.get_errno()))
        return False
    return True


def is_subreaper() -> bool:
    """Whether this process is a child subreaper (always False outside Linux)."""
    prctl = _prctl()
    if prctl is None:
        return False
    value = ctypes.c_int(0)
    if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.addressof(value), 0, 0, 0) != 0:
        return False
    return bool(value.value)


# -- the process table ---------------------------------------------------------------


def _process_ids() -> Iterator[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    me = os.getpid()
    for name in names:
        if name.isdigit() and int(name) != me:
            yield int(name)


def _parent_and_state(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0].decode()


def marker_needle(value: str) -> bytes:
    """What ``/proc/PID/environ`` contains when the marker variable equals ``value``."""
    return f"\0{MARKER_VARIABLE}={value}\0".encode()


def _read(pid: int, name: str) -> bytes | None:
    """`/proc/PID/<name>`; None when the process is gone or not ours to read."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def _in_exec(pid: int) -> bool:
    """Whether the process is between two programs: ``exec`` has given it the new
    program's memory, whose arguments and environment are not set up yet, so /proc shows
    neither (its parent may already have seen the ``exec`` succeed). Zombies and kernel
    threads show neither too, for good."""
    if _read(pid, "cmdline") != b"":
        return False
    stat = _read(pid, "stat")
    if not stat:
        return False
    fields = stat.rsplit(b")", 1)[-1].split()
    if len(fields) < 7 or fields[0] in (b"Z", b"X"):
        return False
    return not int(fields[6]) & _PF_KTHREAD


def _carries(pid: int, needle: bytes) -> bool | None:
    """Whether the process's environment carries ``needle``; None while it is in the
    middle of ``exec`` (ask again in a moment)."""
    environ = _read(pid, "environ")
    if environ == b"":
        if _in_exec(pid):
            return None
        environ = _read(pid, "environ")  # again: its exec may have ended since the first read
    return environ is not None and needle in b"\0" + environ + b"\0"


def _marked(needle: bytes, exclude: Collection[int]) -> tuple[list[int], list[int]]:
    """The processes that carry ``needle``, and those in exec that may carry it."""
    marked, in_exec = [], []
    for pid in _process_ids():
        if pid not in exclude:
            found = _carries(pid, needle)
            if found is None:
                in_exec.append(pid)
            elif found:
                marked.append(pid)
    return marked, in_exec


async def _after_exec(pids: list[int], needle: bytes) -> list[int]:
    """Those of ``pids`` (processes in exec) that carry ``needle`` once their exec is over.
    Exec takes microseconds, more on a loaded machine: asked again every 20 ms, for at most
    `_EXEC_WAIT_SECONDS` (a process still in exec then is left alone, and logged)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _EXEC_WAIT_SECONDS
    marked: list[int] = []
    while pids:
        await asyncio.sleep(_POLL_SECONDS)
        waiting = []
        for pid in pids:
            found = _carries(pid, needle)
            if found is None:
                waiting.append(pid)
            elif found:
                marked.append(pid)
        pids = waiting
        if pids and loop.time() >= deadline:
            logger.warning(
                "pid(s) %s still in exec after %.0fs: not ended", pids, _EXEC_WAIT_SECONDS
            )
            break
    return marked


def _children(exclude: Collection[int]) -> list[int]:
    me = os.getpid()
    found = []
    for pid in _process_ids():
        info = _parent_and_state(pid)
        if info is not None and info[0] == me and pid not in exclude:
            found.append(pid)
    return found


# -- ending processes ----------------------------------------------------------------


@dataclass
class _Target:
    pid: int
    fd: int | None  # a pidfd, or None without pidfd support

    def send(self, sig: signal.Signals) -> None:
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def exited(self) -> bool:
        if self.fd is not None:
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            return bool(poller.poll(0))
        info = _parent_and_state(self.pid)
        return info is None or info[1] in ("Z", "X")

    def reap(self) -> None:
        """Collect the exit status if this is our child (no zombie left behind)."""
        try:
            if self.fd is not None and hasattr(os, "P_PIDFD"):
                os.waitid(os.P_PIDFD, self.fd, os.WEXITED | os.WNOHANG)
            else:
                os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pass  # not our child: its parent reaps it
        except OSError as exc:
            logger.debug("cannot reap %d: %s", self.pid, exc)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _target(pid: int, still_ours: Callable[[int], bool]) -> _Target | None:
    try:
        fd: int | None = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:
        return None
    except OSError:  # ENOSYS: a kernel older than 5.3
        fd = None
    target = _Target(pid, fd)
    # Checked after the pidfd is held: the pidfd's process is the one checked. An exited
    # one still gets reaped (a pid is not reused before it is reaped).
    if still_ours(pid) or (fd is not None and target.exited()):
        return target
    target.close()
    return None


def _resolve_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _wait_for_exits(targets: list[_Target], timeout: float) -> list[_Target]:
    """Wait until every target exited or ``timeout`` passed; return those still running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    waiting = [t for t in targets if not t.exited()]
    if any(t.fd is None for t in waiting):  # no pidfds: poll
        while waiting and loop.time() < deadline:
            await asyncio.sleep(_POLL_SECONDS)
            waiting = [t for t in waiting if not t.exited()]
        return waiting
    futures: list[asyncio.Future[None]] = []
    for target in waiting:
        future: asyncio.Future[None] = loop.create_future()
        assert target.fd is not None
        loop.add_reader(target.fd, _resolve_once, future)
        futures.append(future)
    try:
        if futures:
            await asyncio.wait(futures, timeout=max(0.0, deadline - loop.time()))
    finally:
        for target in waiting:
            assert target.fd is not None
            loop.remove_reader(target.fd)
    return [t for t in waiting if not t.exited()]


async def _end(pids: Iterable[int], still_ours: Callable[[int], bool], grace: float) -> int:
    """SIGTERM, then SIGKILL after ``grace``; reap our children. Returns how many."""
    targets = [t for t in (_target(pid, still_ours) for pid in pids) if t is not None]
    try:
        for target in targets:
            target.send(signal.SIGTERM)
        left = await _wait_for_exits(targets, grace)
        for target in left:
            logger.info(
                "pid %d still running %.1fs after SIGTERM; sending SIGKILL", target.pid, grace
            )
            target.send(signal.SIGKILL)
        for target in await _wait_for_exits(left, _KILL_WAIT_SECONDS):
            logger.warning("pid %d did not exit after SIGKILL", target.pid)
        for target in targets:
            target.reap()
    finally:
        for target in targets:
            target.close()
    return len(targets)


async def end_marked(needle: bytes, *, exclude: Collection[int], grace: float) -> int:
    """End every process whose environment carries ``needle`` (see `marker_needle`).

    ``exclude``: pids never touched (processes someone else reaps, e.g. asyncio's). Scans
    again after each round, as ending a process can orphan or start others; a process is
    tried once (one that survives SIGKILL must not stall us round after round). Returns
    how many processes were ended.
    """
    tried = set(exclude)
    ended = 0
    for _ in range(_ROUNDS):
        pids, in_exec = await asyncio.to_thread(_marked, needle, frozenset(tried))
        if in_exec:  # e.g. an escapee whose parent returned from starting it, and exited
            pids += await _after_exec(in_exec, needle)
        if not pids:
            break
        logger.info("ending %d process(es) that left their terminal: %s", len(pids), pids)
        ended += await _end(pids, lambda pid: _carries(pid, needle) is True, grace)
        tried.update(pids)
    return ended


async def end_orphans(*, keep: Iterable[int] = (), grace_seconds: float = 2.0) -> list[int]:
    """End and reap every child process of this one except ``keep``; for final shutdown.

    Meant for a child subreaper (`become_subreaper`): its children are then the orphans
    it adopted, with or without a terminal marker. The system cannot tell an adopted
    child from one we started, so pass the pids of children still owned by someone (the
    agent process of a live connection): their exit status would be taken from their
    owner. SIGTERM, SIGKILL after ``grace_seconds``; repeated while ending processes
    orphans more of them. Returns the pids ended, sorted.
    """
    kept = set(keep)
    me = os.getpid()

    def still_ours(pid: int) -> bool:
        info = _parent_and_state(pid)
        return info is not None and info[0] == me

    ended: set[int] = set()
    for _ in range(_ROUNDS):
        pids = await asyncio.to_thread(_children, frozenset(kept | ended))
        if not pids:
            break
        logger.info("ending %d orphaned process(es): %s", len(pids), pids)
        await _end(pids, still_ours, grace_seconds)
        ended.update(pids)
    return sorted(ended)
