"""A terminal whose creator is cancelled while its process is being started leaves nothing
behind: the start is finished and the terminal ended like a released one (its group)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from acpstack.local import TerminalManager

sys.path.insert(0, str(Path(__file__).parents[1] / "cli" / "peers"))
from procs import alive, assert_ended  # noqa: E402

pytestmark = pytest.mark.timeout(60)


class PausingStart(TerminalManager):
    """Pauses right after the process runs: the window in which a cancellation used to
    end the create call with the process started but never tracked."""

    running = asyncio.Event()
    go_on = asyncio.Event()

    @staticmethod
    async def _start(*args: object) -> None:
        await TerminalManager._start(*args)  # type: ignore[arg-type]
        PausingStart.running.set()
        await PausingStart.go_on.wait()


async def test_cancelled_while_starting_ends_the_process_group(tmp_path: Path) -> None:
    PausingStart.running, PausingStart.go_on = asyncio.Event(), asyncio.Event()
    manager = PausingStart()
    script = f"sleep 300 & echo $! > {tmp_path}/child; echo $$ > {tmp_path}/shell; wait"
    create = asyncio.create_task(manager.create("s", "sh", ["-c", script]))
    await asyncio.wait_for(PausingStart.running.wait(), 20)
    pids = set()
    try:
        for name in ("child", "shell"):  # written by the script itself right after it started
            path = tmp_path / name
            await asyncio.wait_for(asyncio.to_thread(_wait_for_file, path), 20)
            pids.add(int(path.read_text()))
        create.cancel()
        await asyncio.sleep(0)  # the cancellation lands while the start is paused
        PausingStart.go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await create
        await asyncio.to_thread(assert_ended, pids)
        assert manager.terminal_ids("s") == []
    finally:
        await manager.aclose()
        for pid in pids:
            if alive(pid):
                os.kill(pid, 9)


def _wait_for_file(path: Path) -> None:
    import time

    deadline = time.monotonic() + 20
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)


async def test_cancelled_again_while_the_start_is_finished_still_ends_it(tmp_path: Path) -> None:
    """The creator is cancelled a second time while it waits for the abandoned start to
    finish: it ends cancelled at once, and the manager still ends the process group."""
    PausingStart.running, PausingStart.go_on = asyncio.Event(), asyncio.Event()
    manager = PausingStart()
    script = f"sleep 300 & echo $! > {tmp_path}/child; echo $$ > {tmp_path}/shell; wait"
    create = asyncio.create_task(manager.create("s", "sh", ["-c", script]))
    await asyncio.wait_for(PausingStart.running.wait(), 20)
    pids = set()
    try:
        for name in ("child", "shell"):
            path = tmp_path / name
            await asyncio.wait_for(asyncio.to_thread(_wait_for_file, path), 20)
            pids.add(int(path.read_text()))
        create.cancel()
        await asyncio.sleep(0)  # the first cancellation lands while the start is paused
        create.cancel()  # and the second while the creator waits for the start to finish
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(create, 20)
        assert all(alive(pid) for pid in pids)  # the start is still paused
        PausingStart.go_on.set()
        await asyncio.wait_for(manager.aclose(), 20)  # waits for the abandoned start's end
        await asyncio.to_thread(assert_ended, pids)
        assert manager.terminal_ids("s") == []
    finally:
        PausingStart.go_on.set()
        await manager.aclose()
        for pid in pids:
            if alive(pid):
                os.kill(pid, 9)
