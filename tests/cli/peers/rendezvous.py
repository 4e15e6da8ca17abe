"""Meeting points between a test and the processes it starts, over two named pipes.

A peer calls `checkpoint(name)`: it tells the test `name` (with its pid) and waits until
the test lets it go on. The test side (`Rendezvous`) waits for each checkpoint with a
deadline; nothing polls or sleeps.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path


def checkpoint(name: str, *, wait: bool = True) -> None:
    """Peer side: report `name` and our pid; then (unless `wait` is False) wait for "go"."""
    with open(os.environ["RENDEZVOUS_READY"], "w") as ready:
        ready.write(f"{name} {os.getpid()}\n")
    if wait:
        with open(os.environ["RENDEZVOUS_GO"]) as go:
            go.readline()


class Rendezvous:
    """Test side. Both pipes are opened read-write, so opening never blocks and no side sees EOF."""

    def __init__(self, directory: Path) -> None:
        self.ready_path, self.go_path = directory / "ready.fifo", directory / "go.fifo"
        os.mkfifo(self.ready_path)
        os.mkfifo(self.go_path)
        self._ready = os.open(self.ready_path, os.O_RDWR | os.O_NONBLOCK)
        self._go = os.open(self.go_path, os.O_RDWR)
        self._buffer = b""

    @property
    def env(self) -> dict[str, str]:
        return {"RENDEZVOUS_READY": str(self.ready_path), "RENDEZVOUS_GO": str(self.go_path)}

    def expect(self, name: str, timeout: float = 30) -> int:
        """Wait for checkpoint `name`; returns the pid that reached it."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            ready, _, _ = select.select(
                [self._ready], [], [], max(0.0, deadline - time.monotonic())
            )
            assert ready, f"checkpoint {name!r} not reached within {timeout} s"
            self._buffer += os.read(self._ready, 4096)
        line, self._buffer = self._buffer.split(b"\n", 1)
        got, pid = line.decode().split()
        assert got == name, f"expected checkpoint {name!r}, got {got!r}"
        return int(pid)

    def go(self) -> None:
        os.write(self._go, b"go\n")

    def close(self) -> None:
        os.close(self._ready)
        os.close(self._go)
