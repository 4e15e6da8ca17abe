"""Text file access for the agent: ``fs/read_text_file`` and ``fs/write_text_file``.

Paths reaching this module were already validated and resolved by `Workspace.check`.

Reads keep the file's bytes exactly (CRLF stays CRLF, no newline is added or removed);
``line``/``limit`` select whole lines split on ``\\n`` only. Content that is not valid
UTF-8 is refused instead of being returned mangled.

Writes are atomic: the content goes to a temporary file in the target's directory, is
fsynced and then renamed over the target with `os.replace`, so a reader (or a crash, or a
SIGKILL) sees either the old or the new content, never a mix. The existing file's mode
(and, where permitted, owner) is kept; new files get ``0o666 & ~umask``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import AnyStr

from acpstack.wire._errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RequestError

__all__ = ["BufferProvider", "FileSystem", "WriteObserver", "TEMP_MARKER"]

logger = logging.getLogger(__name__)

BufferProvider = Callable[[Path], str | None]
"""Editor hook: the unsaved buffer contents for a path, or None to read the disk."""

WriteObserver = Callable[[Path, str], None]
"""Editor hook: called (on the event loop) after every successful write."""

TEMP_MARKER = ".acpstack-tmp-"
"""Temporary files are named ``.<target name>.acpstack-tmp-<random>``."""

_READ_CHUNK = 1024 * 1024


def _not_found(path: Path) -> RequestError:
    # gemini-cli (and others) match on "not found" in the message; keep it and the path.
    return RequestError(
        RESOURCE_NOT_FOUND, f"Resource not found: {path} (file not found)", {"uri": str(path)}
    )


def _os_error(path: Path, exc: OSError, action: str) -> RequestError:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return _not_found(path)
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


def _window(text: AnyStr, newline: AnyStr, line: int, limit: int | None) -> tuple[int, int]:
    """Start and end offsets of ``limit`` lines starting at 1-based ``line``."""
    size = len(text)
    start = 0
    for _ in range(line - 1):
        found = text.find(newline, start)
        if found < 0:
            return size, size
        start = found + 1
    if limit is None:
        return start, size
    end = start
    for _ in range(limit):
        found = text.find(newline, end)
        if found < 0:
            return start, size
        end = found + 1
    return start, end


def _check_window(line: int | None, limit: int | None) -> int:
    if line is not None and line < 0:
        raise RequestError.invalid_params(
            {"line": line}, message=f"line must be a positive 1-based line number, got {line}"
        )
    if limit is not None and limit < 0:
        raise RequestError.invalid_params(
            {"limit": limit}, message=f"limit must not be negative, got {limit}"
        )
    return max(line or 1, 1)


class FileSystem:
    """The client's file system capability, with optional editor hooks."""

    def __init__(
        self,
        *,
        buffer_provider: BufferProvider | None = None,
        on_write: WriteObserver | None = None,
        max_read_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self._buffer_provider = buffer_provider
        self._on_write = on_write
        self.max_read_bytes = max_read_bytes

    # -- reading ---------------------------------------------------------------------

    async def read_text_file(
        self, path: Path, line: int | None = None, limit: int | None = None
    ) -> str:
        """Return the file's text, or ``limit`` lines of it starting at 1-based ``line``.

        Line 0 is treated like 1; ``limit=0`` returns ""; a window past the end returns
        what exists (possibly "").
        """
        first = _check_window(line, limit)
        if self._buffer_provider is not None:
            buffered = self._buffer_provider(path)
            if buffered is not None:
                start, end = _window(buffered, "\n", first, limit)
                return buffered[start:end]
        return await asyncio.to_thread(self._read_sync, path, first, limit)

    def _read_sync(self, path: Path, line: int, limit: int | None) -> str:
        try:
            # O_NONBLOCK: opening a FIFO must not hang; it is refused below anyway.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise _os_error(path, exc, "read") from exc
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise RequestError.invalid_params(
                    {"path": str(path)}, message=f"Cannot read {path}: it is a directory"
                )
            if not stat.S_ISREG(info.st_mode):
                raise RequestError.invalid_params(
                    {"path": str(path)}, message=f"Cannot read {path}: not a regular file"
                )
            if info.st_size > self.max_read_bytes:
                raise self._too_large(path, info.st_size)
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            total = 0
            while True:
                chunk = os.read(fd, _READ_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > self.max_read_bytes:  # the file grew while we read it
                    raise self._too_large(path, total)
                chunks.append(chunk)
        except OSError as exc:
            raise _os_error(path, exc, "read") from exc
        finally:
            os.close(fd)
        data = b"".join(chunks)
        start, end = _window(data, b"\n", line, limit)
        # Splitting on b"\n" is safe: 0x0A never occurs inside a multi-byte UTF-8 sequence.
        # Only the returned window is decoded (and so validated).
        try:
            return data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            offset = start + exc.start
            raise RequestError.invalid_params(
                {"path": str(path), "byteOffset": offset, "reason": "invalid_utf8"},
                message=(
                    f"Cannot read {path}: the file is not valid UTF-8 text "
                    f"(invalid byte at offset {offset}); it may be a binary file"
                ),
            ) from None

    def _too_large(self, path: Path, size: int) -> RequestError:
        return RequestError.invalid_params(
            {"path": str(path), "size": size, "maxReadBytes": self.max_read_bytes},
            message=(
                f"Cannot read {path}: the file is too large "
                f"({size} bytes; the limit is {self.max_read_bytes} bytes)"
            ),
        )

    # -- writing ---------------------------------------------------------------------

    async def write_text_file(self, path: Path, content: str) -> None:
        """Atomically replace (or create) the file, creating missing parent directories."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates
            raise RequestError.invalid_params(
                {"path": str(path)},
                message=f"Cannot write {path}: the content is not valid Unicode text ({exc.reason})",
            ) from None
        future = asyncio.get_running_loop().run_in_executor(None, self._write_sync, path, data)
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            # The worker thread cannot be interrupted. Let it finish so that the caller's
            # cancellation does not hide a write that did happen from the on_write hook.
            if not future.cancelled():
                try:
                    await future
                except Exception:
                    pass
                else:
                    self._notify(path, content)
            raise
        self._notify(path, content)

    def _notify(self, path: Path, content: str) -> None:
        if self._on_write is None:
            return
        try:
            self._on_write(path, content)
        except Exception:
            # The write itself succeeded; the agent must not see the editor hook's failure.
            logger.exception("on_write hook failed for %s", path)

    def _write_sync(self, path: Path, data: bytes) -> None:
        directory = path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise RequestError.invalid_params(
                {"path": str(path)},
                message=f"Cannot write {path}: a parent path exists and is not a directory",
            ) from None
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                raise RequestError.invalid_params(
                    {"path": str(path)},
                    message=f"Cannot write {path}: a parent path exists and is not a directory",
                ) from None
            raise _os_error(path, exc, "write") from exc

        try:
            existing: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            existing = None
        except OSError as exc:
            raise _os_error(path, exc, "write") from exc
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            kind = "a directory" if stat.S_ISDIR(existing.st_mode) else "not a regular file"
            raise RequestError.invalid_params(
                {"path": str(path)}, message=f"Cannot write {path}: it is {kind}"
            )

        fd, temp = self._create_temp(path)
        try:
            try:
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                    if (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
                        try:
                            os.fchown(fd, existing.st_uid, existing.st_gid)
                        except PermissionError:
                            logger.debug("cannot keep the owner of %s", path)
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
        except BaseException as exc:
            try:
                os.unlink(temp)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise _os_error(path, exc, "write") from exc
            raise
        self._fsync_directory(directory)

    @staticmethod
    def _create_temp(path: Path) -> tuple[int, str]:
        # Like tempfile.mkstemp, but created with 0o666 so the kernel applies the umask:
        # a new file ends up with exactly the mode a plain open() would have given it.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        for _ in range(100):
            # Keep the name within NAME_MAX (255) even for very long target names.
            temp = str(path.parent / f".{path.name[:200]}{TEMP_MARKER}{secrets.token_hex(6)}")
            try:
                return os.open(temp, flags, 0o666), temp
            except FileExistsError:
                continue
            except OSError as exc:
                raise _os_error(path, exc, "write") from exc
        raise RequestError(INTERNAL_ERROR, f"Cannot write {path}: no free temporary file name")

    @staticmethod
    def _fsync_directory(directory: Path) -> None:
        # Make the rename durable; best effort (not every file system supports it).
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
