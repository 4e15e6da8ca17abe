"""Text files inside a workspace: what ``fs/read_text_file`` and ``fs/write_text_file`` do.

Every operation takes the `Workspace` and the path the agent sent. The path is resolved
and used in one step (`Workspace.locate`): the file is opened, and a new one created and
renamed into place, only relative to the descriptor of the directory the race-free walk
found, with ``O_NOFOLLOW``. A symlink swapped in after the walk makes the operation walk
again (or fail), never escape the workspace; see ``_workspace`` for the limits.

Reads keep the file's bytes exactly (CRLF stays CRLF, no newline is added or removed);
``line``/``limit`` select whole lines split on ``\\n`` only. Content that is not valid
UTF-8 is refused instead of being returned mangled.

Writes are atomic: the content goes to a temporary file in the target's directory, is
fsynced and then renamed over the target, so a reader (or a crash, or a SIGKILL) sees
either the old or the new content, never a mix. The existing file's mode (and, where
permitted, owner) is kept; new files get ``0o666 & ~umask``. Writing through a symlink
inside the workspace replaces the file it points to and keeps the link.
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

from acpstack.local._errors import changed_error, os_error
from acpstack.local._workspace import Location, Workspace
from acpstack.wire import INTERNAL_ERROR, RequestError

__all__ = ["BufferProvider", "FileSystem", "WriteObserver", "TEMP_MARKER"]

logger = logging.getLogger(__name__)

BufferProvider = Callable[[Path], str | None]
"""Editor hook: the unsaved buffer contents for a (resolved) path, or None to read the disk."""

WriteObserver = Callable[[Path, str], None]
"""Editor hook: called (on the event loop) with the resolved path after every successful write."""

TEMP_MARKER = ".acpstack-tmp-"
"""Temporary files are named ``.<target name>.acpstack-tmp-<random>``."""

PathArg = str | os.PathLike[str]

_READ_CHUNK = 1024 * 1024
_ATTEMPTS = 20  # opens per operation when the target keeps turning into a symlink
_SYMLINK_ERRNOS = (errno.ELOOP, errno.EMLINK)  # O_NOFOLLOW on a symlink (Linux, BSD)
_READ_FLAGS = os.O_RDONLY | sum(
    getattr(os, name, 0) for name in ("O_NONBLOCK", "O_NOFOLLOW", "O_NOCTTY", "O_CLOEXEC")
)  # getattr: importable everywhere; the file operations need POSIX


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


def _locate(workspace: Workspace, path: PathArg, action: str, *, create: bool = False) -> Location:
    try:
        return workspace.locate(path, create=create)
    except NotADirectoryError as exc:
        if not create:
            raise os_error(exc.filename, exc, action) from exc
        raise RequestError.invalid_params(
            {"path": exc.filename},
            message=f"Cannot {action} {exc.filename}: a parent path exists and is not a directory",
        ) from None
    except OSError as exc:
        raise os_error(exc.filename or os.fspath(path), exc, action) from exc


class FileSystem:
    """Text file access inside a `Workspace`, with optional editor hooks.

    One instance serves any number of workspaces (a client's sessions, or an agent that
    does the file work itself): each call names the workspace.

    Args:
        buffer_provider: Unsaved editor buffers to read instead of the disk.
        on_write: Told of every successful write (e.g. to reload an editor's buffer).
        max_read_bytes: The largest file `read_text_file` reads; a larger one is refused
            with invalid params (the limit is in the error's data).
    """

    def __init__(
        self,
        *,
        buffer_provider: BufferProvider | None = None,
        on_write: WriteObserver | None = None,
        max_read_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self._buffer_provider = buffer_provider
        self._on_write = on_write
        self.max_read_bytes: int = max_read_bytes
        """The largest file `read_text_file` reads, in bytes."""

    # -- reading ---------------------------------------------------------------------

    async def read_text_file(
        self,
        workspace: Workspace,
        path: PathArg,
        line: int | None = None,
        limit: int | None = None,
    ) -> str:
        """Return the file's text, or ``limit`` lines of it starting at 1-based ``line``.

        Line 0 is treated like 1; ``limit=0`` returns ""; a window past the end returns
        what exists (possibly "").
        """
        first = _check_window(line, limit)
        if self._buffer_provider is not None:
            # The boundary applies to unsaved buffers too; the disk read below walks again.
            buffered = self._buffer_provider(workspace.check(os.fspath(path)))
            if buffered is not None:
                start, end = _window(buffered, "\n", first, limit)
                return buffered[start:end]
        return await asyncio.to_thread(self._read_sync, workspace, path, first, limit)

    def _read_sync(self, workspace: Workspace, path: PathArg, line: int, limit: int | None) -> str:
        fd, resolved = self._open_for_reading(workspace, path)
        try:
            data = self._read_all(fd, resolved)
        except OSError as exc:
            raise os_error(resolved, exc, "read") from exc
        finally:
            os.close(fd)
        start, end = _window(data, b"\n", line, limit)
        # Splitting on b"\n" is safe: 0x0A never occurs inside a multi-byte UTF-8 sequence.
        # Only the returned window is decoded (and so validated).
        try:
            return data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            offset = start + exc.start
            raise RequestError.invalid_params(
                {"path": str(resolved), "byteOffset": offset, "reason": "invalid_utf8"},
                message=(
                    f"Cannot read {resolved}: the file is not valid UTF-8 text "
                    f"(invalid byte at offset {offset}); it may be a binary file"
                ),
            ) from None

    @staticmethod
    def _open_for_reading(workspace: Workspace, path: PathArg) -> tuple[int, Path]:
        for _ in range(_ATTEMPTS):
            with _locate(workspace, path, "read") as location:
                try:
                    # O_NONBLOCK: opening a FIFO must not hang; it is refused below anyway.
                    fd = os.open(location.name, _READ_FLAGS, dir_fd=location.dir_fd)
                except OSError as exc:
                    if exc.errno in _SYMLINK_ERRNOS:
                        continue  # became a symlink after the walk looked: walk again
                    raise os_error(location.path, exc, "read") from exc
                return fd, location.path
        raise changed_error(os.fspath(path), "read")

    def _read_all(self, fd: int, path: Path) -> bytes:
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
                return b"".join(chunks)
            total += len(chunk)
            if total > self.max_read_bytes:  # the file grew while we read it
                raise self._too_large(path, total)
            chunks.append(chunk)

    def _too_large(self, path: Path, size: int) -> RequestError:
        return RequestError.invalid_params(
            {"path": str(path), "size": size, "maxReadBytes": self.max_read_bytes},
            message=(
                f"Cannot read {path}: the file is too large "
                f"({size} bytes; the limit is {self.max_read_bytes} bytes)"
            ),
        )

    # -- writing ---------------------------------------------------------------------

    async def write_text_file(self, workspace: Workspace, path: PathArg, content: str) -> None:
        """Atomically replace (or create) the file, creating missing parent directories."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates
            raise RequestError.invalid_params(
                {"path": os.fspath(path)},
                message=f"Cannot write {os.fspath(path)}: the content is not valid Unicode text ({exc.reason})",
            ) from None
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, self._write_sync, workspace, path, data)
        try:
            written = await asyncio.shield(future)
        except asyncio.CancelledError:
            # The worker thread cannot be interrupted. Let it finish so that the caller's
            # cancellation does not hide a write that did happen from the on_write hook.
            if not future.cancelled():
                try:
                    written = await future
                except Exception:
                    pass
                else:
                    self._notify(written, content)
            raise
        self._notify(written, content)

    def _notify(self, path: Path, content: str) -> None:
        if self._on_write is None:
            return
        try:
            self._on_write(path, content)
        except Exception:
            # The write itself succeeded; the agent must not see the editor hook's failure.
            logger.exception("on_write hook failed for %s", path)

    def _write_sync(self, workspace: Workspace, path: PathArg, data: bytes) -> Path:
        for _ in range(_ATTEMPTS):
            with _locate(workspace, path, "write", create=True) as location:
                if self._write_in(location, data):
                    return location.path
        raise changed_error(os.fspath(path), "write")

    def _write_in(self, location: Location, data: bytes) -> bool:
        """Write into the located directory; False if the target turned into a symlink."""
        path, dir_fd, name = location.path, location.dir_fd, location.name
        try:
            existing: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        except OSError as exc:
            raise os_error(path, exc, "write") from exc
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            return False
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            kind = "a directory" if stat.S_ISDIR(existing.st_mode) else "not a regular file"
            raise RequestError.invalid_params(
                {"path": str(path)}, message=f"Cannot write {path}: it is {kind}"
            )
        fd, temp = self._create_temp(location)
        try:
            try:
                if existing is not None:
                    self._keep_mode_and_owner(fd, existing, path)
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            # rename never follows a symlink at the target name: a symlink swapped in
            # there is replaced, whatever it points to.
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException as exc:
            try:
                os.unlink(temp, dir_fd=dir_fd)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise os_error(path, exc, "write") from exc
            raise
        self._fsync_directory(dir_fd)
        return True

    @staticmethod
    def _keep_mode_and_owner(fd: int, existing: os.stat_result, path: Path) -> None:
        os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        if (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.fchown(fd, existing.st_uid, existing.st_gid)
            except PermissionError:
                logger.debug("cannot keep the owner of %s", path)

    @staticmethod
    def _create_temp(location: Location) -> tuple[int, str]:
        # Like tempfile.mkstemp, but created with 0o666 so the kernel applies the umask:
        # a new file ends up with exactly the mode a plain open() would have given it.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(100):
            # Keep the name within NAME_MAX (255) even for very long target names.
            temp = f".{location.name[:200]}{TEMP_MARKER}{secrets.token_hex(6)}"
            try:
                return os.open(temp, flags, 0o666, dir_fd=location.dir_fd), temp
            except FileExistsError:
                continue
            except OSError as exc:
                raise os_error(location.path, exc, "write") from exc
        raise RequestError(
            INTERNAL_ERROR, f"Cannot write {location.path}: no free temporary file name"
        )

    @staticmethod
    def _fsync_directory(dir_fd: int) -> None:
        # Make the rename durable; best effort (not every file system supports it).
        # dir_fd may be an O_PATH descriptor, which cannot be fsynced: open "." in it.
        try:
            fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
