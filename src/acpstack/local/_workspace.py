"""The session's workspace boundary: which paths the agent's file operations may touch.

A session has a working directory (``cwd``) and optionally additional directories; the
user may widen the boundary with extra roots or switch it off (``unrestricted``). A
requested path is resolved the way the OS would (``..``, every symlink, also symlinked
parent directories and symlinks to files that do not exist yet) and refused with -32005
when it ends up outside every root.

Guarantees: resolving and using a path are one step. `Workspace.locate` walks the path
component by component relative to directory descriptors, never following a symlink by
name (see ``_walk``), and hands out the descriptor of the directory that holds the
target; `FileSystem` opens, creates and renames only relative to that descriptor. A
process that swaps files or directories for symlinks while we work can make an
operation fail, never make it read or write outside the roots. Symlinks that stay
inside the roots (also from one root into another) keep working.

Limits, by design or by the OS:

* Hard links: a hard link inside a root to a file outside it *is* that file; reading or
  writing it in place is allowed (writes replace the link by a new file, so the outside
  copy keeps its content). Linux's ``protected_hardlinks`` stops other users' files from
  being linked in.
* Mount points and bind mounts inside a root are part of the tree: a bind mount of ``/``
  inside the workspace exposes ``/``. Mounting needs privileges the agent should not have.
* A directory that someone renames out of a root while an operation holds it is used
  where it now is; this needs write access to the destination outside the roots.
* A root is pinned by (device, inode) when first seen; a root replaced by another
  directory is refused. Roots that do not exist yet are pinned when first found.
* `Workspace.check` returns a resolved path for display and decisions that do not open
  anything (e.g. a terminal's working directory). Opening that path by name later is
  the check-then-use race this module exists to avoid; use `locate` or `FileSystem`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from acpstack.local._errors import changed_error, not_found, os_error
from acpstack.local._walk import Changed, Escape, RootReplaced, Roots, Walk, create_missing, walk
from acpstack.wire import RequestError

__all__ = ["Location", "Workspace"]

logger = logging.getLogger(__name__)

_ATTEMPTS = 20
"""Walks per operation before giving up on a path that keeps changing under us."""


def _absolute(path: object) -> str:
    if not isinstance(path, str | os.PathLike):
        raise RequestError.invalid_params(
            {"path": path}, message=f"Path must be absolute: {path!r}"
        )
    text = os.fspath(path)
    if not isinstance(text, str) or not os.path.isabs(text):
        raise RequestError.invalid_params(
            {"path": text}, message=f"Path must be absolute: {text!r}"
        )
    if "\0" in text:
        raise RequestError.invalid_params(
            {"path": text}, message=f"Invalid path {text!r}: embedded null byte"
        )
    return text


def _root(directory: str, what: str) -> Path:
    if not isinstance(directory, str) or not os.path.isabs(directory):
        raise RequestError.invalid_params(
            {"path": directory}, message=f"The {what} must be an absolute path: {directory!r}"
        )
    try:
        return Path(os.path.realpath(directory))
    except ValueError as exc:  # embedded NUL byte
        raise RequestError.invalid_params(
            {"path": directory}, message=f"Invalid path {directory!r}: {exc}"
        ) from exc


class Location:
    """A path found inside the workspace: its directory, open, and the name in it.

    ``dir_fd`` is a descriptor of the directory that holds the target (``O_PATH`` on
    Linux: use it as ``dir_fd=``, not for reading); ``name`` is the target's name in it
    (``"."`` when the path named that directory itself); ``path`` is the resolved real
    path. The name was not a symlink when the walk looked at it: open it with
    ``O_NOFOLLOW``, and treat ``ELOOP`` as "changed, locate again". Close the location
    (or use it as a context manager) when done.
    """

    def __init__(self, dir_fd: int, name: str, path: Path) -> None:
        self.dir_fd: int = dir_fd
        """The open directory that holds the target (-1 once closed)."""
        self.name: str = name
        """The target's name in that directory ("." for the directory itself)."""
        self.path: Path = path
        """The target's resolved real path (for messages and decisions, not for opening)."""

    def __repr__(self) -> str:
        return f"Location({str(self.path)!r})"

    def __enter__(self) -> Location:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the directory descriptor (``dir_fd`` becomes -1). Idempotent."""
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1


class Workspace:
    """The set of directory trees a session may read and write.

    ``roots`` holds the resolved real paths of ``cwd``, the additional directories and the
    extra roots (the user widened the boundary), de-duplicated, in that order.

    Args:
        cwd: The session's working directory (absolute).
        additional_directories: More directories the session may use (absolute).
        extra_roots: Directories the user added to the boundary (absolute).
        unrestricted: Allow every path (the boundary is off; paths are still resolved).

    Raises:
        RequestError: A directory is not an absolute path (invalid params).
    """

    def __init__(
        self,
        cwd: str,
        additional_directories: Sequence[str] = (),
        *,
        extra_roots: Sequence[str] = (),
        unrestricted: bool = False,
    ) -> None:
        roots: list[Path] = []
        candidates = [(cwd, "session working directory")]
        candidates += [(d, "additional directory") for d in additional_directories]
        candidates += [(d, "extra workspace root") for d in extra_roots]
        for directory, what in candidates:
            root = _root(directory, what)
            if root not in roots:
                roots.append(root)
        self.roots: tuple[Path, ...] = tuple(roots)
        """The resolved real paths of the roots, in the order given, without duplicates."""
        self._roots = Roots([str(r) for r in roots], unrestricted=unrestricted)

    @property
    def unrestricted(self) -> bool:
        """Whether every path is allowed (the user switched the boundary off)."""
        return self._roots.unrestricted

    def __repr__(self) -> str:
        roots = ", ".join(str(r) for r in self.roots)
        return f"Workspace(roots=[{roots}], unrestricted={self.unrestricted})"

    def contains(self, resolved: Path) -> bool:
        """Whether an already resolved path lies inside (or is) one of the roots."""
        return self._roots.inside(str(resolved))

    def check(self, path: str, *, must_exist: bool = False) -> Path:
        """Validate an agent-supplied path and return its resolved real path.

        Raises `RequestError`: invalid params for a relative path, permission denied for
        a path that resolves outside every root, resource not found if ``must_exist``
        and nothing exists there. The result is a snapshot: see the module doc.
        """
        text = _absolute(path)
        try:
            result = self._walk(text)
        except OSError as exc:  # too many symlinks
            raise os_error(text, exc, "resolve") from exc
        with result:
            if must_exist and not result.exists():
                raise not_found(path)
            return Path(result.path)

    def locate(self, path: str | os.PathLike[str], *, create: bool = False) -> Location:
        """Find ``path`` inside the workspace without races and open its directory.

        With ``create``, missing parent directories are created (inside the roots only).
        Raises `RequestError` for a bad path or one outside the workspace, and `OSError`
        (with the resolved path as ``filename``) when the directory cannot be reached:
        `FileNotFoundError`, `NotADirectoryError` (a file is in the way),
        `PermissionError`, ELOOP for a symlink loop.
        """
        text = _absolute(path)
        for _ in range(_ATTEMPTS):
            with self._walk(text) as result:
                broken = result.broken
                if broken is not None:
                    if not create:
                        raise OSError(broken.errno, broken.strerror, result.path) from broken
                    try:
                        create_missing(self._roots, result)
                    except Changed:
                        continue
                    except Escape as exc:
                        raise self._denied(text, exc.resolved) from None
                    except OSError as exc:
                        raise OSError(exc.errno, exc.strerror, result.path) from exc
                return Location(result.detach_dir_fd(), result.name, Path(result.path))
        raise changed_error(text, "open")

    def _walk(self, path: str) -> Walk:
        try:
            return walk(self._roots, path)
        except Escape as exc:
            raise self._denied(path, exc.resolved) from None
        except RootReplaced as exc:
            logger.warning("workspace root %s was replaced; refusing %s", exc.root, path)
            raise RequestError.permission_denied(
                path,
                f"Permission denied: {path}: the workspace directory {exc.root} "
                "was replaced by another directory",
            ) from None

    @staticmethod
    def _denied(path: str, resolved: str) -> RequestError:
        logger.info("refused path outside the workspace: %s -> %s", path, resolved)
        message = None
        if resolved != os.path.normpath(path):
            message = (
                f"Permission denied: {path} resolves to {resolved}, "
                "which is outside the session's workspace"
            )
        return RequestError.permission_denied(path, message)
