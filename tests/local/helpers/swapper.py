"""Test helper: the attacker of tests/local/test_races.py, as a thread or as a process.

It atomically exchanges (``renameat2`` with ``RENAME_EXCHANGE``: there is never a moment
without either name) ``WS/dir`` with ``WS/dir-swap`` (a symlink to a directory outside)
and, inside the real directory, ``file.txt`` with ``file-swap`` (a symlink to a file
outside), at random, as fast as it can. At random: a fixed order can lock into step with
the victim's system calls and hide most states from it.

Usage as a process: python swapper.py WS. Prints "ready", swaps until stdin is closed,
then prints the number of swaps.
"""

from __future__ import annotations

import ctypes
import os
import random
import select
import sys
from collections.abc import Callable

_RENAME_EXCHANGE = 2
_BATCH = 64


def renameat2() -> Callable[..., int] | None:
    function: Callable[..., int] | None = getattr(
        ctypes.CDLL(None, use_errno=True), "renameat2", None
    )
    return function


def exchange(dir_fd: int, a: str, b: str) -> None:
    function = renameat2()
    assert function is not None
    if function(dir_fd, a.encode(), dir_fd, b.encode(), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), a)


def swap(ws: str, keep_going: Callable[[], bool]) -> int:
    """Swap until ``keep_going()`` is False (asked every few dozen swaps); return the count."""
    ws_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    real_dir_fd = os.open(os.path.join(ws, "dir"), os.O_RDONLY | os.O_DIRECTORY)
    choices = random.Random(1234).choices
    swaps = 0
    try:
        while keep_going():
            for swap_dir in choices((True, False), k=_BATCH):
                if swap_dir:
                    exchange(ws_fd, "dir", "dir-swap")
                else:
                    exchange(real_dir_fd, "file.txt", "file-swap")
            swaps += _BATCH
    finally:
        os.close(ws_fd)
        os.close(real_dir_fd)
    return swaps


def _stdin_open() -> bool:
    readable, _, _ = select.select([sys.stdin], [], [], 0)
    return not readable  # readable: EOF (the test closed it)


if __name__ == "__main__":
    print("ready", flush=True)
    print(swap(sys.argv[1], _stdin_open), flush=True)
