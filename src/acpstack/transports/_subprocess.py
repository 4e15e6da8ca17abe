"""Spawn a peer process and talk to it over its stdin/stdout."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from acpstack._reads import read_in_heap_sized_chunks
from acpstack.transports._base import DataCallback, EofCallback
from acpstack.transports._fdio import FdReader, FdWriter
from acpstack.transports._plumbing import Inbox, WriteFlow

log = logging.getLogger("acpstack.peer")

StderrCallback: TypeAlias = Callable[[str], None]
"""Receives each line the peer writes to stderr (decoded, without its line ending)."""
STDERR_LINE_LIMIT = 64 * 1024
#: Characters of a stderr line kept in the tail (what `close_reason` shows).
TAIL_LINE_LIMIT = 4096


class _ProcessPipes(asyncio.SubprocessProtocol):
    """Routes the child's stdout to the inbox and its stderr to line handling."""

    def __init__(self, inbox: Inbox, flow: WriteFlow, stderr_line: Callable[[str], None]) -> None:
        self.inbox = inbox
        self.flow = flow
        self._stderr_line = stderr_line
        self._stderr_partial = b""
        self.exited: asyncio.Event = asyncio.Event()
        self.stderr_closed: asyncio.Event = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        """stdout bytes go to the inbox, stderr bytes to line splitting."""
        if fd == 1:
            self.inbox.data(data)
        else:
            self._stderr_bytes(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        """A pipe closed: stdin's end releases `drain`, stdout's ends the input, stderr's
        emits its unfinished last line."""
        if fd == 0:
            self.flow.connection_lost(exc)
        elif fd == 1:
            self.inbox.eof()
        else:
            if self._stderr_partial:
                self._emit(self._stderr_partial)
                self._stderr_partial = b""
            self.stderr_closed.set()

    def process_exited(self) -> None:
        """The process ended (its pipes may still be open)."""
        self.exited.set()

    def pause_writing(self) -> None:
        """stdin's buffer is full: `drain` waits."""
        self.flow.pause_writing()

    def resume_writing(self) -> None:
        """stdin's buffer emptied: `drain` returns."""
        self.flow.resume_writing()

    def _stderr_bytes(self, data: bytes) -> None:
        *lines, rest = (self._stderr_partial + data).split(b"\n")
        for line in lines:
            self._emit(line)
        while len(rest) > STDERR_LINE_LIMIT:  # do not wait for the end of a runaway line
            self._emit(rest[:STDERR_LINE_LIMIT])
            rest = rest[STDERR_LINE_LIMIT:]
        self._stderr_partial = rest

    def _emit(self, line: bytes) -> None:
        # A runaway line shows up in pieces of at most STDERR_LINE_LIMIT bytes.
        for start in range(0, max(len(line), 1), STDERR_LINE_LIMIT):
            piece = line[start : start + STDERR_LINE_LIMIT]
            self._stderr_line(piece.decode("utf-8", errors="replace").rstrip("\r"))


class _DirectPipes:
    """The child's stdin and stdout as OS pipes this process reads and writes itself
    (`spawn(direct_io=True)`); the reading starts at once (the inbox keeps it)."""

    def __init__(
        self, stdin_fd: int, stdout_fd: int, inbox: Inbox, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.writer: FdWriter = FdWriter(stdin_fd, loop, name="the peer's stdin")
        self.reader: FdReader = FdReader(stdout_fd, inbox, loop)
        self.reader.start()


class SubprocessTransport:
    """The peer's stdin/stdout as a transport, its stderr drained continuously.

    Shutdown ladder (several real agents ignore stdin EOF): close stdin, wait, SIGTERM
    the process group, wait, SIGKILL it.

    Start one with `spawn`. The process runs in a new session (its own process group),
    so the ladder, and the final SIGKILL of the group, also reach what it started. The
    last stderr lines are kept for `close_reason` and `stderr_tail`.
    """

    def __init__(
        self,
        process: asyncio.SubprocessTransport,
        pipes: _ProcessPipes,
        *,
        stderr_callback: StderrCallback | None,
        stderr_tail: deque[str],
        shutdown_timeout: float,
        description: str,
        direct: _DirectPipes | None = None,
    ) -> None:
        self._process = process
        self._pipes = pipes
        self._direct = direct
        if direct is None:
            # (uvloop's pipe transports do not subclass asyncio's, hence the casts)
            self._stdin = cast(asyncio.WriteTransport, process.get_pipe_transport(0))
            self._stdout = cast(asyncio.ReadTransport, process.get_pipe_transport(1))
            read_in_heap_sized_chunks(self._stdout)
        self._stdin_closing: asyncio.Task[None] | None = None
        self._stderr_callback = stderr_callback
        self._stderr_tail = stderr_tail
        self._shutdown_timeout = shutdown_timeout
        self._description = description
        self._closed = False

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        stderr_callback: StderrCallback | None = None,
        stderr_tail_lines: int = 200,
        shutdown_timeout: float = 2.0,
        description: str | None = None,
        direct_io: bool = False,
    ) -> SubprocessTransport:
        """Start `command` (an argv list, or a shell command line as one string).

        `description` names the process in `close_reason` (default: the command line);
        pass a redacted one when the command line may carry a secret.

        Args:
            command: The program and its arguments, or a command line for the shell.
            env: Variables to set for the process, on top of this process's environment
                (or instead of it, with `inherit_env=False`).
            inherit_env: Whether the process starts from this process's environment.
            cwd: Its working directory (default: ours).
            stderr_callback: Gets each stderr line as it comes; without one, lines are
                logged at debug level. An exception it raises is logged, never raised.
            stderr_tail_lines: How many of the last stderr lines to keep.
            shutdown_timeout: Seconds `close` waits at each step of the ladder.
            description: How `close_reason` names the process.
            direct_io: Talk over OS pipes that this process reads and writes itself
                (`add_reader`/`add_writer`, `os.read`/`os.write`) instead of the event
                loop's pipe transports over socket pairs: less work per message, for a
                process that only passes messages on (the conductor). Same behaviour
                otherwise.

        Raises:
            ValueError: `command` is an empty list.
            OSError: The program cannot be started (e.g. `FileNotFoundError`).
        """
        full_env = dict(os.environ) if inherit_env else {}
        if env:
            full_env.update(env)
        loop = asyncio.get_running_loop()
        tail: deque[str] = deque(maxlen=stderr_tail_lines)

        def stderr_line(text: str) -> None:
            tail.append(text if len(text) <= TAIL_LINE_LIMIT else text[:TAIL_LINE_LIMIT] + "...")
            if stderr_callback is None:
                log.debug("peer stderr: %s", text)
                return
            try:
                stderr_callback(text)
            except Exception:  # a UI callback must not stop the draining
                log.exception("stderr callback failed")

        pipes = _ProcessPipes(Inbox(), WriteFlow(), stderr_line)
        common: dict[str, Any] = dict(
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,  # so the shutdown ladder reaches the agent's children too
        )
        if not isinstance(command, str) and not command:
            raise ValueError("empty agent command")
        shown = command if isinstance(command, str) else " ".join(command)
        process, direct = await _start(loop, pipes, command, common, direct_io)
        return cls(
            process,
            pipes,
            stderr_callback=stderr_callback,
            stderr_tail=tail,
            shutdown_timeout=shutdown_timeout,
            description=description or shown,
            direct=direct,
        )

    # -- the Transport interface -------------------------------------------------

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver the process's stdout to `on_data` (what it wrote since it started
        first), then call `on_eof` once when its stdout closes. Raises `RuntimeError`
        when called twice."""
        self._pipes.inbox.attach(on_data, on_eof)

    def pause_reading(self) -> None:
        """Stop reading stdout until `resume_reading` (the process blocks once the pipe is
        full); stderr is still drained."""
        if self._direct is not None:
            self._direct.reader.pause()
        elif not self._stdout.is_closing():
            self._stdout.pause_reading()

    def resume_reading(self) -> None:
        """Read stdout again after `pause_reading`."""
        if self._direct is not None:
            self._direct.reader.resume()
        elif not self._stdout.is_closing():
            self._stdout.resume_reading()

    def write(self, data: bytes) -> None:
        """Queue `data` for the process's stdin, in order. Dropped after `close` or once
        stdin closed (the process exited, or closed it)."""
        if self._closed:
            return
        if self._direct is not None:
            self._direct.writer.write(data)
        elif not self._stdin.is_closing():
            self._stdin.write(data)

    async def drain(self) -> None:
        """Wait while stdin's buffer is over its high-water mark (the process is not
        reading); returns at once after stdin closed."""
        if self._direct is not None:
            await self._direct.writer.drain()
        else:
            await self._pipes.flow.drain()

    def write_buffer_size(self) -> int:
        """Bytes queued for stdin and not yet taken by the pipe."""
        if self._direct is not None:
            return self._direct.writer.buffer_size()
        return self._stdin.get_write_buffer_size()

    async def settle(self) -> None:
        """After stdout closed: wait up to a second for the process to exit, then up to a
        second for its stderr to close, so that `close_reason` can tell how it ended."""
        # stdout closed: give the process a moment to exit and its stderr to drain, so
        # the ConnectionClosed error can say how it ended (exit code, last stderr lines).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._pipes.exited.wait(), 1.0)
        if self.returncode is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._pipes.stderr_closed.wait(), 1.0)

    def close_reason(self) -> str | None:
        """Once the process exited: its description, exit code (or killing signal) and
        last 20 stderr lines; None while it runs."""
        code = self.returncode
        if code is None:
            return None
        how = f"exited with code {code}" if code >= 0 else f"was killed by {_signal_name(-code)}"
        tail = "\n".join(self.stderr_tail()[-20:])
        reason = f"peer process `{self._description}` {how}"
        return f"{reason}; last stderr lines:\n{tail}" if tail else reason

    async def close(self) -> None:
        """End the process: close stdin (after what is queued is written), then walk the
        shutdown ladder until it exited, SIGKILL what is left of its process group, and
        wait briefly for the rest of its stderr. Idempotent. A process that ignores both
        the end of stdin and SIGTERM is killed after two `shutdown_timeout`s."""
        if self._closed:
            return
        self._closed = True
        # The polite request to exit: stdin ends (after what is buffered is sent).
        direct = self._direct
        if direct is None:
            self._stdin.close()
        else:
            self._stdin_closing = asyncio.ensure_future(direct.writer.close(self._shutdown_timeout))
        try:
            await self._terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._pipes.stderr_closed.wait(), 1.0)
        finally:
            self._process.close()
            if direct is not None:
                direct.reader.close()
                if self._stdin_closing is not None:
                    await asyncio.wait([self._stdin_closing])

    # -- the process ---------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The process id (also its process group id)."""
        return self._process.get_pid()

    @property
    def returncode(self) -> int | None:
        """The exit code once the process exited (negative: the number of the signal that
        killed it); None while it runs."""
        return self._process.get_returncode()

    def stderr_tail(self) -> list[str]:
        """A copy of the last stderr lines kept (`stderr_tail_lines` at most, each cut to
        4096 characters), oldest first."""
        return list(self._stderr_tail)

    async def wait_exit(self) -> int:
        """Wait until the process exited and return its `returncode`. Has no timeout of
        its own: wrap it in one, or `close` the transport to end the process."""
        await self._pipes.exited.wait()
        code = self.returncode
        assert code is not None
        return code

    async def _terminate(self) -> None:
        pid = self.pid
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if self._pipes.exited.is_set():
                break
            if sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)
            try:
                await asyncio.wait_for(
                    self._pipes.exited.wait(),
                    self._shutdown_timeout if sig != signal.SIGKILL else 10,
                )
            except TimeoutError:
                continue
        # Children of the agent that outlived it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


async def _start(
    loop: asyncio.AbstractEventLoop,
    pipes: _ProcessPipes,
    command: Sequence[str] | str,
    common: dict[str, Any],
    direct_io: bool,
) -> tuple[asyncio.SubprocessTransport, _DirectPipes | None]:
    """Start the process; with `direct_io`, on two OS pipes whose child ends are closed
    here once it has them (and ours too when it cannot start)."""
    child_ends: list[int] = []
    ours: list[int] = []
    if direct_io:
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        child_ends, ours = [stdin_read, stdout_write], [stdin_write, stdout_read]
        common = {**common, "stdin": stdin_read, "stdout": stdout_write}
    try:
        if isinstance(command, str):
            process, _ = await loop.subprocess_shell(lambda: pipes, command, **common)
        else:
            process, _ = await loop.subprocess_exec(lambda: pipes, *command, **common)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in child_ends:
            os.close(fd)
    direct = _DirectPipes(ours[0], ours[1], pipes.inbox, loop) if direct_io else None
    return process, direct


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
