"""TerminalManager with real processes.

Nothing here sleeps to wait for something to happen: tests wait on the manager's events
(`wait_for_exit`, the private `_wait_for_output`) or on pidfds, always under a timeout.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest

from acpstack.local import TerminalExit, TerminalManager
from acpstack.wire._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    RequestError,
)

pytestmark = pytest.mark.timeout(60)

PY = sys.executable
SESSION = "sess-1"
T = 20.0  # generous upper bound for anything a test waits for


@pytest.fixture
async def manager() -> AsyncIterator[TerminalManager]:
    m = TerminalManager(kill_grace_seconds=2.0)
    try:
        yield m
    finally:
        await asyncio.wait_for(m.aclose(), T)


async def run(manager: TerminalManager, command: str, *args: str, **kwargs: object) -> str:
    return await manager.create(SESSION, command, args, **kwargs)  # type: ignore[arg-type]


async def finished(manager: TerminalManager, tid: str, session: str = SESSION) -> TerminalExit:
    return await asyncio.wait_for(manager.wait_for_exit(session, tid), T)


async def lines_of(manager: TerminalManager, tid: str, count: int) -> list[str]:
    text = await asyncio.wait_for(
        manager._wait_for_output(SESSION, tid, lambda t: t.count("\n") >= count), T
    )
    return text.splitlines()[:count]


class PidWatch:
    """pidfds opened while the processes are alive; readable once each has exited."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.fds = {pid: os.pidfd_open(pid) for pid in pids}

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)

    def alive(self) -> list[int]:
        readable, _, _ = select.select(list(self.fds.values()), [], [], 0)
        return [pid for pid, fd in self.fds.items() if fd not in readable]

    async def all_dead(self, timeout: float = T) -> None:
        loop = asyncio.get_running_loop()
        for fd in self.fds.values():
            exited = loop.create_future()
            loop.add_reader(fd, lambda f=exited: f.done() or f.set_result(None))  # type: ignore[misc]
            try:
                await asyncio.wait_for(exited, timeout)
            finally:
                loop.remove_reader(fd)
        for pid in self.fds:  # gone, or at most a zombie nobody reaped yet
            assert not _running(pid), pid


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


# -- running commands -------------------------------------------------------------------


async def test_echo_with_args(manager: TerminalManager) -> None:
    tid = await run(manager, "echo", "hello", "  spaced  world", "$HOME")
    assert tid.startswith("term-")
    assert await finished(manager, tid) == TerminalExit(exit_code=0, signal=None)
    out = manager.output(SESSION, tid)
    assert out.output == "hello   spaced  world $HOME\n"  # no shell: nothing expanded
    assert out.truncated is False
    assert out.exit_status == TerminalExit(exit_code=0, signal=None)


async def test_whole_command_line_runs_through_the_shell(manager: TerminalManager) -> None:
    tid = await manager.create(SESSION, "echo hello world | tr a-z A-Z && echo $((40 + 2))")
    assert await finished(manager, tid) == TerminalExit(0, None)
    assert manager.output(SESSION, tid).output == "HELLO WORLD\n42\n"


async def test_exit_code(manager: TerminalManager) -> None:
    tid = await run(manager, "sh", "-c", "echo bye; exit 3")
    assert await finished(manager, tid) == TerminalExit(exit_code=3, signal=None)
    assert manager.output(SESSION, tid).output == "bye\n"


async def test_env_is_added_to_the_inherited_environment(
    manager: TerminalManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACPSTACK_INHERITED", "from-parent")
    script = "import os; print(os.environ['ACP_ADDED'], os.environ['ACPSTACK_INHERITED'])"
    tid = await run(manager, PY, "-c", script, env={"ACP_ADDED": "yes it is"})
    assert await finished(manager, tid) == TerminalExit(0, None)
    assert manager.output(SESSION, tid).output == "yes it is from-parent\n"


async def test_cwd(manager: TerminalManager, tmp_path: Path) -> None:
    tid = await run(manager, PY, "-c", "import os; print(os.getcwd())", cwd=str(tmp_path))
    await finished(manager, tid)
    assert manager.output(SESSION, tid).output == f"{tmp_path.resolve()}\n"


async def test_stdout_and_stderr_interleaved_in_order(manager: TerminalManager) -> None:
    script = (
        "import sys\n"
        "for i in range(200):\n"
        "    sys.stdout.write(f'out {i}\\n'); sys.stdout.flush()\n"
        "    sys.stderr.write(f'err {i}\\n'); sys.stderr.flush()\n"
    )
    tid = await run(manager, PY, "-c", script)
    assert await finished(manager, tid) == TerminalExit(0, None)
    expected = "".join(f"out {i}\nerr {i}\n" for i in range(200))
    assert manager.output(SESSION, tid).output == expected


async def test_stdin_is_empty(manager: TerminalManager) -> None:
    tid = await run(manager, PY, "-c", "import sys; print(repr(sys.stdin.read()))")
    await finished(manager, tid)
    assert manager.output(SESSION, tid).output == "''\n"


async def test_start_errors(manager: TerminalManager, tmp_path: Path) -> None:
    with pytest.raises(RequestError) as info:
        await manager.create(SESSION, "definitely-not-a-command-acpstack")
    assert info.value.code == INVALID_PARAMS and "not found" in info.value.message
    with pytest.raises(RequestError) as info:
        await manager.create(SESSION, "echo", cwd=str(tmp_path / "missing"))
    assert info.value.code == INVALID_PARAMS and "does not exist" in info.value.message
    with pytest.raises(RequestError) as info:
        await manager.create(SESSION, "echo", output_byte_limit=-1)
    assert info.value.code == INVALID_PARAMS
    with pytest.raises(RequestError) as info:
        await manager.create(SESSION, "")
    assert info.value.code == INVALID_PARAMS
    assert manager._terminals == {}


# -- output limits ------------------------------------------------------------------------


async def test_fifty_megabytes_with_a_small_limit_stay_bounded(manager: TerminalManager) -> None:
    limit = 64 * 1024
    script = (
        "import sys\n"
        "chunk = b''.join(b'%015d\\n' % i for i in range(4096))\n"  # 64 KiB
        "for _ in range(800):\n"  # 50 MiB
        "    sys.stdout.buffer.write(chunk)\n"
        "sys.stdout.buffer.write(b'THE END\\n')\n"
    )
    tid = await run(manager, PY, "-c", script, output_byte_limit=limit)
    assert await finished(manager, tid) == TerminalExit(0, None)
    out = manager.output(SESSION, tid)
    assert out.truncated is True
    data = out.output.encode()
    assert len(data) <= limit
    assert len(data) >= limit - 3
    assert out.output.endswith("000000000004095\nTHE END\n")
    assert manager._held_bytes(SESSION, tid) <= limit
    assert manager._peak_held_bytes(SESSION, tid) <= limit  # never more, at any moment


async def test_small_output_is_not_truncated(manager: TerminalManager) -> None:
    tid = await run(manager, "printf", "12345", output_byte_limit=5)
    await finished(manager, tid)
    assert manager.output(SESSION, tid).output == "12345"
    assert manager.output(SESSION, tid).truncated is False
    tid = await run(manager, "printf", "123456", output_byte_limit=5)
    await finished(manager, tid)
    assert manager.output(SESSION, tid).output == "23456"
    assert manager.output(SESSION, tid).truncated is True


async def test_default_output_limit_applies() -> None:
    async with TerminalManager(default_output_byte_limit=10) as m:
        tid = await m.create(SESSION, "printf", ["abcdefghijklmnopqrstuvwxyz"])
        await asyncio.wait_for(m.wait_for_exit(SESSION, tid), T)
        out = m.output(SESSION, tid)
        assert (out.output, out.truncated) == ("qrstuvwxyz", True)


async def test_multibyte_output_cut_at_a_character_boundary(manager: TerminalManager) -> None:
    text = "é€😀" * 1000  # 2 + 3 + 4 bytes per repetition
    script = f"import sys; sys.stdout.write({text!r}); sys.stdout.flush()"
    for limit in range(1000, 1009):  # every possible cut position within a repetition
        tid = await run(manager, PY, "-c", script, output_byte_limit=limit)
        await finished(manager, tid)
        out = manager.output(SESSION, tid)
        assert out.truncated is True
        data = out.output.encode("utf-8")  # round-trips: valid UTF-8
        assert limit - 3 <= len(data) <= limit
        assert "\ufffd" not in out.output
        assert text.endswith(out.output)
        await manager.release(SESSION, tid)


async def test_incomplete_trailing_character_of_a_running_process(
    manager: TerminalManager,
) -> None:
    script = (
        "import sys, time\n"
        "sys.stdout.buffer.write('ready é'.encode() + b'\\xe2\\x82'); sys.stdout.flush()\n"
        "time.sleep(1000)\n"
    )
    tid = await run(manager, PY, "-c", script)
    text = await asyncio.wait_for(
        manager._wait_for_output(SESSION, tid, lambda t: t.startswith("ready é")), T
    )
    # the two bytes of the unfinished "€" are held back while the process runs
    assert text == "ready é"
    assert manager.output(SESSION, tid).output == "ready é"
    await asyncio.wait_for(manager.kill(SESSION, tid), T)
    out = manager.output(SESSION, tid)
    assert out.output == "ready é\ufffd"  # the output is complete: replaced, not dropped
    assert out.exit_status == TerminalExit(None, "SIGTERM")


async def test_invalid_bytes_are_replaced(manager: TerminalManager) -> None:
    tid = await run(manager, "printf", "a\\377b\\n")
    await finished(manager, tid)
    assert manager.output(SESSION, tid).output == "a\ufffdb\n"


# -- signals and kill ---------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
async def test_exit_by_signal_reports_the_signal_name(
    manager: TerminalManager, sig: signal.Signals
) -> None:
    script = f"import os; print('bye', flush=True); os.kill(os.getpid(), {int(sig)})"
    if sig == signal.SIGINT:  # python handles SIGINT itself unless restored
        script = "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); " + script
    tid = await run(manager, PY, "-c", script)
    status = await finished(manager, tid)
    assert status == TerminalExit(exit_code=None, signal=sig.name)
    assert manager.output(SESSION, tid).exit_status == status
    assert manager.output(SESSION, tid).output == "bye\n"


async def test_kill_reaches_the_children(manager: TerminalManager) -> None:
    script = "sleep 1000 & echo $!; sleep 1000 & echo $!; wait"
    tid = await run(manager, "sh", "-c", script)
    pids = [int(line) for line in await lines_of(manager, tid, 2)]
    leader = manager._pid(SESSION, tid)
    watch = PidWatch([leader, *pids])
    try:
        assert sorted(watch.alive()) == sorted([leader, *pids])
        assert manager.output(SESSION, tid).exit_status is None
        await asyncio.wait_for(manager.kill(SESSION, tid), T)
        await watch.all_dead()
    finally:
        watch.close()
    status = await finished(manager, tid)
    assert status == TerminalExit(exit_code=None, signal="SIGTERM")
    # the terminal stays valid after kill
    out = manager.output(SESSION, tid)
    assert out.exit_status == status
    assert out.output.splitlines()[:2] == [str(p) for p in pids]
    await manager.kill(SESSION, tid)  # killing again is harmless


async def test_kill_escalates_to_sigkill_for_processes_ignoring_sigterm() -> None:
    script = (
        "import signal, subprocess, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen(['sleep', '1000'])\n"  # inherits the ignored SIGTERM
        "print(child.pid, flush=True)\n"
        "time.sleep(1000)\n"
    )
    async with TerminalManager(kill_grace_seconds=0.5) as m:
        tid = await m.create(SESSION, PY, ["-c", script])
        text = await asyncio.wait_for(m._wait_for_output(SESSION, tid, lambda t: "\n" in t), T)
        watch = PidWatch([m._pid(SESSION, tid), int(text.split()[0])])
        try:
            started = time.monotonic()
            await asyncio.wait_for(m.kill(SESSION, tid), T)
            elapsed = time.monotonic() - started
            await watch.all_dead()
        finally:
            watch.close()
        assert 0.4 <= elapsed < 10
        status = await asyncio.wait_for(m.wait_for_exit(SESSION, tid), T)
        assert status == TerminalExit(exit_code=None, signal="SIGKILL")


async def test_kill_after_exit_also_kills_stragglers(manager: TerminalManager) -> None:
    # The leader exits normally, a background child that detached from the output pipe
    # and ignores SIGTERM lives on: kill (and release) must not let it survive.
    manager.kill_grace_seconds = 0.5
    script = "(trap '' TERM; exec sleep 1000) >/dev/null 2>&1 & echo $!"
    tid = await run(manager, "sh", "-c", script)
    assert await finished(manager, tid) == TerminalExit(0, None)
    watch = PidWatch([int(manager.output(SESSION, tid).output)])
    try:
        assert watch.alive()  # exiting does not kill background processes ...
        await asyncio.wait_for(manager.kill(SESSION, tid), T)
        await watch.all_dead()  # ... kill does
    finally:
        watch.close()
    assert await finished(manager, tid) == TerminalExit(0, None)  # the exit is unchanged


async def test_background_child_holding_the_output_does_not_block_the_exit(
    manager: TerminalManager,
) -> None:
    manager._drain_seconds = 0.2
    tid = await run(manager, "sh", "-c", "sleep 1000 & echo started $!")
    status = await finished(manager, tid)  # does not wait for the sleep
    assert status == TerminalExit(0, None)
    out = manager.output(SESSION, tid)
    assert out.output.startswith("started ")
    assert out.exit_status == status
    watch = PidWatch([int(out.output.split()[1])])
    try:
        assert watch.alive()
        await asyncio.wait_for(manager.release(SESSION, tid), T)
        await watch.all_dead()
    finally:
        watch.close()


# -- waiting --------------------------------------------------------------------------------


async def test_wait_for_exit_concurrently_and_after_exit(manager: TerminalManager) -> None:
    tid = await run(manager, "sleep", "1000")
    waiters = [asyncio.create_task(manager.wait_for_exit(SESSION, tid)) for _ in range(2)]
    await asyncio.sleep(0)  # let both start waiting
    assert not any(w.done() for w in waiters)
    await asyncio.wait_for(manager.kill(SESSION, tid), T)
    first, second = await asyncio.wait_for(asyncio.gather(*waiters), T)
    assert first == second == TerminalExit(None, "SIGTERM")
    assert await finished(manager, tid) == first  # after the exit: returns at once

    tid = await run(manager, "true")
    results = await asyncio.wait_for(
        asyncio.gather(*(manager.wait_for_exit(SESSION, tid) for _ in range(3))), T
    )
    assert results == [TerminalExit(0, None)] * 3
    assert await finished(manager, tid) == TerminalExit(0, None)


async def test_exit_status_only_after_all_output(manager: TerminalManager) -> None:
    script = "import sys; sys.stdout.write('x' * 3_000_000); sys.stdout.flush()"
    tid = await run(manager, PY, "-c", script)
    await finished(manager, tid)
    out = manager.output(SESSION, tid)
    assert out.exit_status == TerminalExit(0, None)
    assert len(out.output) == 3_000_000


async def test_pending_wait_is_resolved_by_release(manager: TerminalManager) -> None:
    tid = await run(manager, "sleep", "1000")
    waiter = asyncio.create_task(manager.wait_for_exit(SESSION, tid))
    await asyncio.sleep(0)
    await asyncio.wait_for(manager.release(SESSION, tid), T)
    assert await asyncio.wait_for(waiter, T) == TerminalExit(None, "SIGTERM")


# -- ids, release, sessions, the cap ----------------------------------------------------------


def assert_not_found(info: pytest.ExceptionInfo[RequestError], tid: str) -> None:
    assert info.value.code == RESOURCE_NOT_FOUND == -32002
    assert tid in info.value.message


async def test_unknown_and_foreign_ids_are_not_found(manager: TerminalManager) -> None:
    tid = await run(manager, "true")
    await finished(manager, tid)
    for session, terminal in (("other-session", tid), (SESSION, "term-doesnotexist")):
        with pytest.raises(RequestError) as info:
            manager.output(session, terminal)
        assert_not_found(info, terminal)
        with pytest.raises(RequestError) as info:
            await manager.wait_for_exit(session, terminal)
        assert_not_found(info, terminal)
        with pytest.raises(RequestError) as info:
            await manager.kill(session, terminal)
        assert_not_found(info, terminal)
        with pytest.raises(RequestError) as info:
            await manager.release(session, terminal)
        assert_not_found(info, terminal)
    manager.output(SESSION, tid)  # still fine for its own session


async def test_release_kills_and_forgets(manager: TerminalManager) -> None:
    tid = await run(manager, "sleep", "1000")
    watch = PidWatch([manager._pid(SESSION, tid)])
    try:
        await asyncio.wait_for(manager.release(SESSION, tid), T)
        await watch.all_dead()
    finally:
        watch.close()
    with pytest.raises(RequestError) as info:
        manager.output(SESSION, tid)
    assert_not_found(info, tid)
    with pytest.raises(RequestError) as info:
        await manager.wait_for_exit(SESSION, tid)
    assert_not_found(info, tid)
    with pytest.raises(RequestError) as info:
        await manager.kill(SESSION, tid)
    assert_not_found(info, tid)
    with pytest.raises(RequestError) as info:
        await manager.release(SESSION, tid)
    assert_not_found(info, tid)
    # releasing an already finished terminal works as well
    tid = await run(manager, "true")
    await finished(manager, tid)
    await asyncio.wait_for(manager.release(SESSION, tid), T)
    assert manager._terminals == {}


async def test_release_session_and_aclose_leave_no_processes() -> None:
    m = TerminalManager(kill_grace_seconds=0.5)
    a = [await m.create("A", "sh", ["-c", "sleep 1000 & echo $!; wait"]) for _ in range(3)]
    b = await m.create("B", "sh", ["-c", "trap '' TERM; sleep 1000 & echo $!; wait"])
    children: dict[str, int] = {}
    for session, tid in [("A", t) for t in a] + [("B", b)]:
        text = await asyncio.wait_for(m._wait_for_output(session, tid, lambda t: "\n" in t), T)
        children[tid] = int(text.split()[0])
    watch_a = PidWatch([m._pid("A", t) for t in a] + [children[t] for t in a])
    watch_b = PidWatch([m._pid("B", b), children[b]])
    try:
        await asyncio.wait_for(m.release_session("A"), T)
        await watch_a.all_dead()
        assert sorted(watch_b.alive()) == sorted(watch_b.fds)  # session B untouched
        for tid in a:
            with pytest.raises(RequestError):
                m.output("A", tid)
        assert m.output("B", b).exit_status is None
        await asyncio.wait_for(m.aclose(), T)
        await watch_b.all_dead()
    finally:
        watch_a.close()
        watch_b.close()
    assert m._terminals == {} and m._tasks == set()
    with pytest.raises(RequestError) as info:
        await m.create("B", "true")
    assert info.value.code == INTERNAL_ERROR
    await m.aclose()  # idempotent


async def test_terminal_cap() -> None:
    async with TerminalManager(max_terminals=2) as m:
        first = await m.create(SESSION, "sleep", ["1000"])
        await m.create("other", "true")  # the cap is per manager, across sessions
        with pytest.raises(RequestError) as info:
            await m.create(SESSION, "true")
        assert info.value.code == INTERNAL_ERROR
        assert "Too many terminals" in info.value.message
        assert info.value.data == {"reason": "too_many_terminals", "limit": 2}
        # finished but not released terminals still count; released ones do not
        await asyncio.wait_for(m.release(SESSION, first), T)
        third = await m.create(SESSION, "true")
        assert await asyncio.wait_for(m.wait_for_exit(SESSION, third), T) == TerminalExit(0, None)


async def test_cancelled_kill_still_completes(manager: TerminalManager) -> None:
    manager.kill_grace_seconds = 0.5
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ok', flush=True); time.sleep(1000)"
    tid = await run(manager, PY, "-c", script)
    await lines_of(manager, tid, 1)
    kill = asyncio.create_task(manager.kill(SESSION, tid))
    await asyncio.sleep(0)
    kill.cancel()  # e.g. the request was cancelled: the escalation must still happen
    with pytest.raises(asyncio.CancelledError):
        await kill
    assert await finished(manager, tid) == TerminalExit(None, "SIGKILL")


async def test_ids_are_unique(manager: TerminalManager) -> None:
    ids = {await run(manager, "true") for _ in range(10)}
    assert len(ids) == 10
    for tid in ids:
        await finished(manager, tid)


async def test_changed_fires_on_output_and_exit_of_any_terminal(manager: TerminalManager) -> None:
    # A view that follows running commands takes the future, then reads, then waits.
    change = manager.changed()
    assert manager.changed() is change  # one pending signal at a time
    script = "import sys; print('one', flush=True); sys.stdin.readline()"
    quiet = await manager.create(SESSION, PY, ["-c", "import time; time.sleep(30)"])
    talker = await manager.create(SESSION, PY, ["-c", script])
    await asyncio.wait_for(change, T)
    await asyncio.wait_for(manager._wait_for_output(SESSION, talker, lambda t: t == "one\n"), T)
    change = manager.changed()
    assert not change.done()  # nothing new since the read
    await manager.kill(SESSION, quiet)
    await asyncio.wait_for(change, T)  # the other terminal's exit is a change too
    await manager.release(SESSION, talker)
