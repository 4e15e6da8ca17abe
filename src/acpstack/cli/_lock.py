"""One writer per session: an exclusive lock file per session in the user's state directory.

`flock` locks belong to the open file, so a chat that dies (even by SIGKILL) releases its
lock with it; the file keeps the holder's pid only to name it in the message. The lock's
descriptor is not inherited by the agent (Python opens files non-inheritable).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from acpstack.cli._errors import EXIT_ERROR, CliError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locking
    fcntl = None  # type: ignore[assignment]


class SessionBusy(CliError):
    def __init__(self, what: str, pid: str) -> None:
        holder = f" (pid {pid})" if pid else ""
        super().__init__(
            f"{what} is open in another acpstack chat{holder}; only one chat may write to a "
            "session at a time: finish that chat first, or continue in a new session",
            EXIT_ERROR,
        )


class SessionLock:
    """An exclusive lock named by `key` (e.g. "session:<id>"), held until `release`."""

    def __init__(self, folder: Path, key: str, what: str) -> None:
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        self.path = folder / f"{digest}.lock"
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None or self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise SessionBusy(self.what, pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def is_locked(folder: Path, key: str) -> bool:
    """Whether another process holds the lock `key` (for `sessions delete`)."""
    probe = SessionLock(folder, key, key)
    try:
        probe.acquire()
    except SessionBusy:
        return True
    probe.release()
    return False
