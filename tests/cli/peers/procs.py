"""Looking at real processes from tests: children, liveness, command lines (Linux /proc)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path


def children(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            kids.update(int(kid) for kid in (task / "children").read_text().split())
    return kids


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmdline(pid: int) -> str:
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    return ""


def assert_ended(pids: set[int], timeout: float = 15) -> None:
    # A process that ends gives no event to wait on: poll /proc, with a deadline.
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {pid: cmdline(pid) for pid in pids if alive(pid)}
    assert not left, f"still running: {left}"
