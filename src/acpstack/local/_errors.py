"""How file system errors are reported to the agent (shared by `Workspace` and `FileSystem`)."""

from __future__ import annotations

from pathlib import Path

from acpstack.wire import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RequestError

__all__ = ["changed_error", "not_found", "os_error"]


def not_found(path: Path | str) -> RequestError:
    # gemini-cli (and others) match on "not found" in the message; keep it and the path.
    return RequestError(
        RESOURCE_NOT_FOUND, f"Resource not found: {path} (file not found)", {"uri": str(path)}
    )


def os_error(path: Path | str, exc: OSError, action: str) -> RequestError:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return not_found(path)
    if isinstance(exc, PermissionError):
        return RequestError.permission_denied(
            str(path), f"Permission denied: cannot {action} {path}: {exc.strerror}"
        )
    if isinstance(exc, IsADirectoryError):
        return RequestError.invalid_params(
            {"path": str(path)}, message=f"Cannot {action} {path}: it is a directory"
        )
    return RequestError(
        INTERNAL_ERROR,
        f"Cannot {action} {path}: {exc.strerror or exc}",
        {"path": str(path), "errno": exc.errno},
    )


def changed_error(path: str, action: str) -> RequestError:
    """The path kept changing (symlinks swapped in) every time we tried: give up."""
    return RequestError(
        INTERNAL_ERROR,
        f"Cannot {action} {path}: it kept changing while it was being opened; try again",
        {"path": path, "reason": "changed"},
    )
