"""The session's workspace boundary: which paths an agent may touch through the client.

A session has a working directory (``cwd``) and optionally additional directories, both
chosen by the agent in ``session/new``; the user may widen the boundary with extra roots
or switch it off entirely (``unrestricted``). `Workspace.check` resolves a requested path
the way the OS will (``..`` and every symlink, including symlinked parent directories and
symlinks pointing to files that do not exist yet) and refuses anything that ends up
outside every root.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from acpstack.wire._errors import RESOURCE_NOT_FOUND, RequestError

__all__ = ["Workspace"]

logger = logging.getLogger(__name__)


def _resolve(path: str) -> Path:
    """Resolve ``path`` like the OS would, also when (parts of) it do not exist yet.

    `os.path.realpath` (non-strict) already resolves the deepest existing prefix, follows
    dangling symlinks to their target and appends the non-existent rest lexically.
    """
    try:
        return Path(os.path.realpath(path))
    except ValueError as exc:  # embedded NUL byte
        raise RequestError.invalid_params(
            {"path": path}, message=f"Invalid path {path!r}: {exc}"
        ) from exc


def _root(directory: str, what: str) -> Path:
    if not os.path.isabs(directory):
        raise RequestError.invalid_params(
            {"path": directory}, message=f"The {what} must be an absolute path: {directory!r}"
        )
    return _resolve(directory)


class Workspace:
    """The set of directory trees a session may read and write.

    ``roots`` holds the resolved real paths of ``cwd``, the additional directories and the
    extra roots (the user widened the boundary), de-duplicated, in that order.
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
        self.unrestricted = unrestricted

    def __repr__(self) -> str:
        roots = ", ".join(str(r) for r in self.roots)
        return f"Workspace(roots=[{roots}], unrestricted={self.unrestricted})"

    def contains(self, resolved: Path) -> bool:
        """Whether an already resolved path lies inside (or is) one of the roots."""
        return self.unrestricted or any(resolved.is_relative_to(root) for root in self.roots)

    def check(self, path: str, *, must_exist: bool = False) -> Path:
        """Validate an agent-supplied path and return its resolved real path.

        Raises `RequestError`: invalid params for a relative path, permission denied for
        a path that resolves outside every root, resource not found if ``must_exist``
        and nothing exists there.
        """
        if not isinstance(path, str) or not os.path.isabs(path):
            raise RequestError.invalid_params(
                {"path": path}, message=f"Path must be absolute: {path!r}"
            )
        resolved = _resolve(path)
        if not self.contains(resolved):
            logger.info("refused path outside the workspace: %s -> %s", path, resolved)
            message = None
            if str(resolved) != os.path.normpath(path):
                message = (
                    f"Permission denied: {path} resolves to {resolved}, "
                    "which is outside the session's workspace"
                )
            raise RequestError.permission_denied(path, message)
        if must_exist and not os.path.lexists(resolved):
            raise RequestError(
                RESOURCE_NOT_FOUND,
                f"Resource not found: {path} (file not found)",
                {"uri": path},
            )
        return resolved
