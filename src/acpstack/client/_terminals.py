"""Terminals: processes the agent runs through the client (``terminal/*`` methods).

Each terminal is a real child process started without a shell (``command`` + ``args``),
in its own session and process group, with stdout and stderr sharing one pipe so their
output stays interleaved in order. Only the last ``output_byte_limit`` bytes of output
are kept, so memory stays bounded whatever the process prints.

Implementation notes:

* The process is started with `loop.subprocess_exec` and a small `SubprocessProtocol`
  rather than `asyncio.create_subprocess_exec`: `Process.wait()` only returns once every
  pipe is closed, so a background grandchild that inherited stdout (``server &``) would
  make the exit unobservable. The protocol reports the three events separately: output
  data, end of output, and exit of the process itself.
* A terminal's exit status is published once the process has exited *and* its output
  reached EOF. If the process exited but something it started in the background keeps
  the output pipe open, the exit is published after `_EXIT_DRAIN_SECONDS` anyway; the
  background processes keep running (their output is still collected) until the
  terminal is killed or released.
* kill/release signal the whole process group: SIGTERM, then (after the process and
  everything holding its output pipe went away, or after ``kill_grace_seconds``) SIGKILL
  for whatever is left of the group. Processes that leave the group (``setsid``) escape.
* No task is left unowned: kill and release run as manager-owned tasks (shielded from
  the caller's cancellation so a cancelled request cannot leave a half-killed process),
  and `TerminalManager.aclose` awaits all of them. The asyncio child watcher reaps every
  process we start.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import secrets
import signal
import subprocess
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from acpstack.wire._errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RequestError

__all__ = ["TerminalExit", "TerminalManager", "TerminalOutput"]

logger = logging.getLogger(__name__)

_EXIT_DRAIN_SECONDS = 1.0
"""How long to wait for the end of output after the process exited (see module doc)."""

_REAP_TIMEOUT_SECONDS = 10.0
"""How long kill waits for the process to exit after SIGKILL before giving up (logged)."""


@dataclass(frozen=True, slots=True)
class TerminalExit:
    """How a terminal's process ended: an exit code, or the name of the killing signal."""

    exit_code: int | None
    signal: str | None


@dataclass(frozen=True, slots=True)
class TerminalOutput:
    """A snapshot of a terminal's output; ``exit_status`` is None while it runs."""

    output: str
    truncated: bool
    exit_status: TerminalExit | None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        if signal.SIGRTMIN < number < signal.SIGRTMAX:
            return f"SIGRTMIN+{number - signal.SIGRTMIN}"
        return f"SIG{number}"


def _exit_from_returncode(returncode: int | None) -> TerminalExit:
    if returncode is None:  # never observed (the process could not be reaped in time)
        return TerminalExit(exit_code=None, signal=None)
    if returncode < 0:
        return TerminalExit(exit_code=None, signal=_signal_name(-returncode))
    return TerminalExit(exit_code=returncode, signal=None)


def _is_continuation(byte: int) -> bool:
    return byte & 0b1100_0000 == 0b1000_0000


def _not_found(terminal_id: str) -> RequestError:
    return RequestError(
        RESOURCE_NOT_FOUND,
        f"Terminal not found: {terminal_id}",
        {"terminalId": terminal_id},
    )


class _Terminal:
    """State of one terminal. All methods run on the event loop thread."""

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        output_limit: int,
        drain_seconds: float,
    ) -> None:
        self.id = terminal_id
        self.session_id = session_id
        self.limit = output_limit
        self.drain_seconds = drain_seconds
        self.buffer = bytearray()
        self.truncated = False
        self.peak_held = 0
        self.transport: asyncio.SubprocessTransport | None = None
        self.pid = 0
        self.returncode: int | None = None
        self.exit_status: TerminalExit | None = None
        self.exited = asyncio.Event()  # the process itself exited (and was reaped)
        self.eof = asyncio.Event()  # the output pipe closed: no more output
        self.done = asyncio.Event()  # exit_status is published
        self.group_gone = False  # the process group has no members left
        self.kill_task: asyncio.Task[None] | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._changed: asyncio.Future[None] | None = None

    # -- events from the protocol ----------------------------------------------------

    def on_data(self, data: bytes) -> None:
        limit = self.limit
        if len(data) >= limit:
            dropped = len(self.buffer) + len(data) > limit
            self.buffer.clear()
            if limit > 0:
                self.buffer += data[len(data) - limit :]
        else:
            overflow = len(self.buffer) + len(data) - limit
            dropped = overflow > 0
            if dropped:
                del self.buffer[:overflow]
            self.buffer += data
        if dropped:
            self.truncated = True
            # Start at a character boundary: skip (at most 3) UTF-8 continuation bytes.
            skip = 0
            while skip < 3 and skip < len(self.buffer) and _is_continuation(self.buffer[skip]):
                skip += 1
            if skip:
                del self.buffer[:skip]
        if len(self.buffer) > self.peak_held:
            self.peak_held = len(self.buffer)
        self._notify()

    def on_eof(self) -> None:
        self.eof.set()
        if self.exited.is_set():
            self.finish()
        self._notify()

    def on_exit(self) -> None:
        assert self.transport is not None
        self.returncode = self.transport.get_returncode()
        self.exited.set()
        if self.eof.is_set():
            self.finish()
        elif self._drain_timer is None:
            loop = asyncio.get_running_loop()
            self._drain_timer = loop.call_later(self.drain_seconds, self._drain_expired)
        self._notify()

    def _drain_expired(self) -> None:
        logger.info(
            "terminal %s: process exited but its output is still open "
            "(background processes?); reporting the exit anyway",
            self.id,
        )
        self.finish()

    def finish(self) -> None:
        """Publish the exit status (idempotent)."""
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        if self.done.is_set():
            return
        self.exit_status = _exit_from_returncode(self.returncode)
        self.done.set()
        if self.eof.is_set():
            # Everything is over: shrink the window in which a recycled pid could be
            # mistaken for our process group, and free the transport.
            self.probe_group()
            self.close_transport()
        self._notify()
        logger.debug("terminal %s finished: %s", self.id, self.exit_status)

    # -- helpers ---------------------------------------------------------------------

    def attach(self, transport: asyncio.SubprocessTransport) -> None:
        self.transport = transport
        self.pid = transport.get_pid()

    def close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def signal_group(self, sig: signal.Signals) -> None:
        if self.group_gone or self.pid <= 0:
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            self.group_gone = True
        except PermissionError:
            logger.warning(
                "terminal %s: not allowed to send %s to its processes", self.id, sig.name
            )
        else:
            logger.debug("terminal %s: sent %s to process group %d", self.id, sig.name, self.pid)

    def probe_group(self) -> None:
        if self.group_gone or self.pid <= 0:
            return
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            self.group_gone = True
        except PermissionError:
            pass

    async def quiet(self) -> None:
        """Wait until the process exited and nothing holds its output pipe any more."""
        await self.exited.wait()
        await self.eof.wait()

    def changed(self) -> asyncio.Future[None]:
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    def text(self) -> str:
        # While output may still arrive, an incomplete trailing UTF-8 sequence is held
        # back (its remaining bytes are on the way); once the output is complete, it (and
        # any invalid byte anywhere) becomes U+FFFD. The raw bytes are kept as they came.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(self.buffer, final=self.eof.is_set())


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, terminal: _Terminal) -> None:
        self._terminal = terminal

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Comes before every other callback. The exit of a quick command can be reported
        # before subprocess_exec() returns (Python 3.13 does), so attach here, not after.
        self._terminal.attach(cast(asyncio.SubprocessTransport, transport))

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._terminal.on_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._terminal.on_eof()

    def process_exited(self) -> None:
        self._terminal.on_exit()


class TerminalManager:
    """Runs and tracks the terminals of every session of one client.

    Errors (all `RequestError`):

    * unknown terminal id, or a terminal of another session: -32002 (resource not
      found), message ``Terminal not found: <id>``;
    * more than ``max_terminals`` live (created and not yet released) terminals:
      -32603 (internal error) with message ``Too many terminals: ...`` and data
      ``{"reason": "too_many_terminals", "limit": N}``. JSON-RPC has no "resource
      exhausted" code and -32600/-32602 would wrongly blame the request's shape;
    * command not found / not executable, bad cwd, bad arguments: -32602 (invalid params).
    """

    def __init__(
        self,
        *,
        max_terminals: int = 16,
        default_output_byte_limit: int = 16 * 1024 * 1024,
        kill_grace_seconds: float = 2.0,
    ) -> None:
        self.max_terminals = max_terminals
        self.default_output_byte_limit = default_output_byte_limit
        self.kill_grace_seconds = kill_grace_seconds
        self._drain_seconds = _EXIT_DRAIN_SECONDS
        self._terminals: dict[str, _Terminal] = {}
        self._starting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    async def __aenter__(self) -> TerminalManager:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- public API ------------------------------------------------------------------

    async def create(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        """Start ``command`` in the background and return the new terminal's id.

        Without ``args``, a ``command`` containing whitespace that is not itself an
        executable file is run through the user's shell (``$SHELL -c`` or ``/bin/sh -c``):
        some agents send a whole command line in ``command``. ``env`` entries are added
        to the inherited environment; stdin is /dev/null.
        """
        if self._closed:
            raise RequestError(INTERNAL_ERROR, "The terminal manager is closed")
        if not command:
            raise RequestError.invalid_params({"command": command}, message="Empty command")
        limit = self.default_output_byte_limit if output_byte_limit is None else output_byte_limit
        if limit < 0:
            raise RequestError.invalid_params(
                {"outputByteLimit": output_byte_limit},
                message=f"outputByteLimit must not be negative, got {output_byte_limit}",
            )
        if len(self._terminals) + self._starting >= self.max_terminals:
            raise RequestError(
                INTERNAL_ERROR,
                f"Too many terminals: at most {self.max_terminals} may be open at once; "
                "release terminals that are no longer needed",
                {"reason": "too_many_terminals", "limit": self.max_terminals},
            )
        if cwd is not None and not os.path.isdir(cwd):
            raise RequestError.invalid_params(
                {"cwd": cwd}, message=f"Working directory does not exist: {cwd}"
            )
        argv = self._argv(command, args)
        environment = dict(os.environ)
        if env:
            environment.update(env)

        terminal_id = "term-" + secrets.token_hex(8)
        while terminal_id in self._terminals:  # pragma: no cover - 64 random bits
            terminal_id = "term-" + secrets.token_hex(8)
        terminal = _Terminal(terminal_id, session_id, limit, self._drain_seconds)
        loop = asyncio.get_running_loop()
        self._starting += 1
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _Protocol(terminal),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=environment,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise RequestError.invalid_params(
                {"command": command}, message=f"Command not found: {command}"
            ) from exc
        except PermissionError as exc:
            raise RequestError.invalid_params(
                {"command": command}, message=f"Command is not executable: {command}"
            ) from exc
        except (ValueError, TypeError) as exc:  # e.g. NUL bytes in args or env
            raise RequestError.invalid_params(
                {"command": command}, message=f"Cannot start {command}: {exc}"
            ) from exc
        except OSError as exc:
            raise RequestError(
                INTERNAL_ERROR,
                f"Cannot start {command}: {exc.strerror or exc}",
                {"command": command, "errno": exc.errno},
            ) from exc
        finally:
            self._starting -= 1
        assert terminal.transport is transport  # attached in connection_made
        self._terminals[terminal_id] = terminal
        logger.debug(
            "terminal %s (session %s): started pid %d: %r",
            terminal_id,
            session_id,
            terminal.pid,
            argv,
        )
        if self._closed:  # aclose() ran while we were starting the process
            await self._release_terminal(terminal_id)
            raise RequestError(INTERNAL_ERROR, "The terminal manager is closed")
        return terminal_id

    def output(self, session_id: str, terminal_id: str) -> TerminalOutput:
        """The output kept so far; ``exit_status`` once the process exited and its
        output was read."""
        terminal = self._get(session_id, terminal_id)
        return TerminalOutput(
            output=terminal.text(),
            truncated=terminal.truncated,
            exit_status=terminal.exit_status if terminal.done.is_set() else None,
        )

    async def wait_for_exit(self, session_id: str, terminal_id: str) -> TerminalExit:
        """Wait until the process exits (returns at once if it already has)."""
        terminal = self._get(session_id, terminal_id)
        await terminal.done.wait()
        assert terminal.exit_status is not None
        return terminal.exit_status

    async def kill(self, session_id: str, terminal_id: str) -> None:
        """Kill the process and its process group; the terminal stays usable."""
        terminal = self._get(session_id, terminal_id)
        await asyncio.shield(self._kill_task(terminal))

    async def release(self, session_id: str, terminal_id: str) -> None:
        """Kill the process if it still runs and forget the terminal."""
        self._get(session_id, terminal_id)
        await self._release_terminal(terminal_id)

    def terminal_ids(self, session_id: str) -> list[str]:
        """The ids of the session's terminals that are not released yet."""
        return [t.id for t in self._terminals.values() if t.session_id == session_id]

    async def release_session(self, session_id: str) -> None:
        """Release every terminal of a session."""
        ids = [t.id for t in self._terminals.values() if t.session_id == session_id]
        await self._release_many(ids)

    async def aclose(self) -> None:
        """Release every terminal of every session and wait for all background work."""
        self._closed = True
        await self._release_many(list(self._terminals))
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- internals -------------------------------------------------------------------

    @staticmethod
    def _argv(command: str, args: Sequence[str]) -> list[str]:
        if args or not any(c.isspace() for c in command):
            return [command, *args]
        if os.path.isfile(command) and os.access(command, os.X_OK):
            return [command]  # an executable whose path contains spaces
        shell = os.environ.get("SHELL") or ""
        if not (os.path.isabs(shell) and os.access(shell, os.X_OK)):
            shell = "/bin/sh"
        return [shell, "-c", command]

    def _get(self, session_id: str, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            # A terminal of another session is reported exactly like an unknown one.
            raise _not_found(terminal_id)
        return terminal

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("terminal background task failed", exc_info=task.exception())

    def _kill_task(self, terminal: _Terminal) -> asyncio.Task[None]:
        if terminal.kill_task is None or terminal.kill_task.done():
            terminal.kill_task = self._spawn(self._terminate(terminal))
        return terminal.kill_task

    async def _terminate(self, terminal: _Terminal) -> None:
        terminal.signal_group(signal.SIGTERM)
        if not terminal.group_gone:
            try:
                await asyncio.wait_for(terminal.quiet(), self.kill_grace_seconds)
            except TimeoutError:
                logger.info(
                    "terminal %s: still running %.1fs after SIGTERM; sending SIGKILL",
                    terminal.id,
                    self.kill_grace_seconds,
                )
        # Also reaches members of the group that outlived the process itself.
        terminal.signal_group(signal.SIGKILL)
        try:
            await asyncio.wait_for(terminal.exited.wait(), _REAP_TIMEOUT_SECONDS)
        except TimeoutError:
            logger.warning(
                "terminal %s: pid %d did not exit after SIGKILL", terminal.id, terminal.pid
            )

    async def _release_terminal(self, terminal_id: str) -> None:
        terminal = self._terminals.pop(terminal_id, None)
        if terminal is None:
            return
        await asyncio.shield(self._spawn(self._dispose(terminal)))

    async def _release_many(self, ids: Sequence[str]) -> None:
        terminals = [t for t in (self._terminals.pop(i, None) for i in ids) if t is not None]
        if not terminals:
            return
        tasks = [self._spawn(self._dispose(t)) for t in terminals]
        await asyncio.shield(asyncio.gather(*tasks, return_exceptions=True))

    async def _dispose(self, terminal: _Terminal) -> None:
        try:
            if not (terminal.done.is_set() and terminal.group_gone):
                await self._kill_task(terminal)
        finally:
            terminal.finish()  # wakes pending wait_for_exit callers
            terminal.close_transport()
            terminal.buffer = bytearray()
            logger.debug("terminal %s released", terminal.id)

    # -- test hooks ------------------------------------------------------------------

    def _held_bytes(self, session_id: str, terminal_id: str) -> int:
        """Bytes of output currently held for the terminal."""
        return len(self._get(session_id, terminal_id).buffer)

    def _peak_held_bytes(self, session_id: str, terminal_id: str) -> int:
        """The most output bytes ever held at once for the terminal."""
        return self._get(session_id, terminal_id).peak_held

    def _pid(self, session_id: str, terminal_id: str) -> int:
        return self._get(session_id, terminal_id).pid

    async def _wait_for_output(
        self, session_id: str, terminal_id: str, predicate: Callable[[str], bool]
    ) -> str:
        """Wait (without polling) until ``predicate(output)`` holds; returns the output.

        Raises `LookupError` if the output is complete and the predicate never held.
        """
        terminal = self._get(session_id, terminal_id)
        while True:
            text = terminal.text()
            if predicate(text):
                return text
            if terminal.eof.is_set():
                raise LookupError(f"terminal {terminal_id} finished without matching output")
            await terminal.changed()
