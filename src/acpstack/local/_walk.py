"""The race-free path walk behind `Workspace`: one component at a time, no symlink followed by name.

A walk starts at a descriptor of ``/`` and opens every directory relative to the
descriptor of the one before it, with ``O_NOFOLLOW`` (``O_PATH`` on Linux: only search
permission is needed). The kernel never follows a symbolic link for us: the walk reads
each link (``readlink`` relative to the directory it is in) and continues with the
link's target itself, and ``..`` steps back to a descriptor the walk already holds.
So the walk always knows the real path of every directory it holds, and a decision
about that path (inside the workspace or not) is a decision about the very directory
that the following ``open``/``mkdir``/``rename`` use, by descriptor. Swapping a file or a
directory for a symlink after the walk passed it changes nothing for this walk; a final
entry that became a symlink after the walk looked at it fails with ``ELOOP`` when it is
opened with ``O_NOFOLLOW``, and the caller walks again (`Changed`).

The result has `os.path.realpath` semantics: missing components are taken literally and
``..`` after them removes them again, so a path may be resolved before it exists.

Roots are pinned by (device, inode) when first seen: a root directory that was renamed
away and replaced by another directory is refused (`RootReplaced`), not trusted by name.

``/proc`` "magic" links (``/proc/PID/fd/N``, ``/proc/PID/cwd``) are followed by their
text like any symlink, never by the kernel's shortcut: a pipe or a deleted file behind
one is not reachable (this only matters in unrestricted mode).

What ``openat2(RESOLVE_BENEATH)`` (Linux 5.6+) would add: the kernel resolves a whole
path in one system call and refuses anything that leaves the starting directory,
including a ``..`` raced against a rename. This walk gets the same guarantee by never
letting the kernel follow a symlink or a ``..``; openat2 would only save system calls
(one instead of one per component). But it refuses two things a workspace must allow,
absolute symlinks that point inside the workspace and symlinks from one root into
another, so it could only be a fast path in front of this walk: two implementations of
one security check, the second one exercised only when the first refuses. Not used.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Changed", "Escape", "RootReplaced", "Roots", "Walk", "create_missing", "walk"]

MAX_SYMLINKS = 40
"""Links followed in one walk before it fails with ELOOP (the kernel's limit)."""

# getattr: the module imports everywhere; walking needs POSIX (dir_fd, O_NOFOLLOW) anyway.
_DIRECTORY = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)
_DIRECTORY |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class Escape(Exception):
    """The path resolves outside every root."""

    def __init__(self, resolved: str) -> None:
        super().__init__(resolved)
        self.resolved = resolved


class RootReplaced(Exception):
    """A root's path now holds a different directory than when it was first seen."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.root = root


class Changed(Exception):
    """The file system changed under the walk in a way that needs a new walk."""


class Roots:
    """The directory trees a walk may end in, each pinned to its (device, inode)."""

    def __init__(self, roots: Sequence[str], *, unrestricted: bool = False) -> None:
        self.paths = tuple(roots)
        self.unrestricted = unrestricted
        self._pins: dict[str, tuple[int, int] | None] = dict.fromkeys(self.paths)
        self._lock = threading.Lock()
        for root in self.paths:
            try:
                info = os.stat(root)
            except (OSError, ValueError):
                continue  # pinned when a walk first finds it
            self._pins[root] = (info.st_dev, info.st_ino)

    def inside(self, path: str) -> bool:
        """Whether a resolved path is (inside) one of the roots."""
        if self.unrestricted:
            return True
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in self.paths)

    def verify(self, path: str, fd: int) -> None:
        """Raise `RootReplaced` if ``path`` is a root and ``fd`` is not its directory."""
        if self.unrestricted or path not in self._pins:
            return
        info = os.fstat(fd)
        found = (info.st_dev, info.st_ino)
        with self._lock:
            pinned = self._pins[path]
            if pinned is None:
                self._pins[path] = pinned = found
        if pinned != found:
            raise RootReplaced(path)


@dataclass
class _Dir:
    path: str
    fd: int | None  # None: not there (or not usable); the walk went on literally
    error: OSError | None = None  # why the first missing directory of a run is missing


def _join(parent: str, name: str) -> str:
    return parent + name if parent.endswith("/") else f"{parent}/{name}"


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part and part != "."]


def _readlink(dir_fd: int, name: str) -> str | None:
    """The target of a symlink, or None when ``name`` is not a symlink (or not there)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def _is_directory(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


class Walk:
    """Where a path led: the directories held (``/`` first) and the final name.

    The final name is never ``..``; it is ``.`` when the path named the directory on top
    of the stack itself. Close it (or use it as a context manager) to close the
    descriptors.
    """

    def __init__(self) -> None:
        self.stack: list[_Dir] = []
        self.name = "."

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> str:
        """The resolved real path of the target."""
        top = self.stack[-1].path
        return top if self.name == "." else _join(top, self.name)

    @property
    def broken(self) -> OSError | None:
        """Why the target's directory is not open: the error of the first missing one."""
        for entry in self.stack:
            if entry.fd is None:
                return entry.error
        return None

    @property
    def dir_fd(self) -> int:
        fd = self.stack[-1].fd
        assert fd is not None, "the directory is missing: check `broken` first"
        return fd

    def detach_dir_fd(self) -> int:
        """Hand the descriptor of the target's directory to the caller (who closes it)."""
        fd = self.dir_fd
        self.stack[-1].fd = None
        return fd

    def exists(self) -> bool:
        if self.stack[-1].fd is None:  # its directory is missing
            return False
        try:
            os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except OSError:
            return False
        return True

    def pop(self) -> None:
        entry = self.stack.pop()
        if entry.fd is not None:
            os.close(entry.fd)

    def close(self) -> None:
        while self.stack:
            self.pop()


def walk(roots: Roots, path: str) -> Walk:
    """Resolve an absolute ``path`` (see the module doc); the caller closes the result.

    Raises `Escape` when the result is outside every root, `RootReplaced`, and `OSError`
    (ELOOP for too many symlinks, or when ``/`` cannot be opened).
    """
    result = Walk()
    try:
        _resolve(roots, path, result)
        if not roots.inside(result.path):
            raise Escape(result.path)
    except BaseException:
        result.close()
        raise
    return result


def _resolve(roots: Roots, path: str, walk: Walk) -> None:
    walk.stack.append(_Dir("/", os.open("/", _DIRECTORY)))
    pending = deque(_components(path))
    links = 0
    while pending:
        name = pending.popleft()
        if name == "..":
            if len(walk.stack) > 1:
                walk.pop()
            continue
        top = walk.stack[-1]
        child = _join(top.path, name)
        if top.fd is None:  # below a missing directory: literal, like realpath
            if not pending:
                walk.name = name
                return
            walk.stack.append(_Dir(child, None))
            continue
        if not pending:  # the final name: only a symlink needs more work
            target = _readlink(top.fd, name)
            if target is None:
                walk.name = name
                return
        else:
            try:
                fd = os.open(name, _DIRECTORY, dir_fd=top.fd)
            except OSError as exc:
                target = (
                    _readlink(top.fd, name) if exc.errno in (errno.ENOTDIR, errno.ELOOP) else None
                )
                if target is None and _is_directory(top.fd, name):
                    target = name  # was a symlink a moment ago: look again (counts as a link)
                elif target is None:
                    walk.stack.append(_Dir(child, None, exc))
                    continue
            else:
                walk.stack.append(_Dir(child, fd))
                roots.verify(child, fd)
                continue
        links += 1
        if links > MAX_SYMLINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
        if target.startswith("/"):
            while len(walk.stack) > 1:
                walk.pop()
        pending.extendleft(reversed(_components(target)))
    walk.name = "."


def create_missing(roots: Roots, walk: Walk) -> None:
    """Create the directories a walk found missing, each relative to its parent's fd.

    Raises the walk's error if a directory is unusable for another reason than not
    existing (a file is in the way, no permission), `Escape` before creating anything
    outside every root, and `Changed` if something other than a directory appeared
    where one was just created or found (walk again).
    """
    broken = walk.broken
    if broken is None:
        return
    if broken.errno != errno.ENOENT:
        raise broken
    for index, entry in enumerate(walk.stack):
        if entry.fd is not None:
            continue
        if not roots.inside(entry.path):
            raise Escape(entry.path)
        parent = walk.stack[index - 1].fd
        assert parent is not None
        name = entry.path.rsplit("/", 1)[1]
        try:
            os.mkdir(name, 0o777, dir_fd=parent)
        except FileExistsError:
            pass  # made by someone else meanwhile: fine if it is a directory
        try:
            entry.fd = os.open(name, _DIRECTORY, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT):
                raise Changed(entry.path) from exc
            raise
        entry.error = None
        roots.verify(entry.path, entry.fd)
