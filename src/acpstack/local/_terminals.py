"""Terminals: processes the agent runs (the ``terminal/*`` methods, on either side).

Each terminal is a real child process started without a shell (``command`` + ``args``),
in its own session and process group, with stdout and stderr sharing one pipe so their
output stays interleaved in order (see ``_terminal`` for output and exit handling).

Ending a terminal (kill, release, `TerminalManager.aclose`):

* The whole process group gets SIGTERM, then (after the process and everything holding
  its output pipe went away, or after ``kill_grace_seconds``) SIGKILL for whatever is
  left of the group.
* At the same time, processes that left the group (``setsid``, daemons) are found by
  the terminal's environment marker and ended the same way, and reaped when they are
  our children (re-parented orphans, see ``_reaper``); once more after the group is
  gone, for processes that escaped meanwhile. A process that drops the marker from its
  environment before it escapes is only caught by `end_orphans` in a subreaper.
* No task is left unowned: kill and release run as manager-owned tasks (shielded from
  the caller's cancellation so a cancelled request cannot leave a half-killed process),
  and `TerminalManager.aclose` awaits all of them. The asyncio child watcher reaps every
  process we start; the sweeps never touch those.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import subprocess
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from acpstack.local._reaper import MARKER_VARIABLE, end_marked, marker_needle
from acpstack.local._terminal import Terminal, TerminalExit, TerminalOutput, TerminalProtocol
from acpstack.wire import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RequestError

__all__ = ["TerminalExit", "TerminalManager", "TerminalOutput"]

logger = logging.getLogger(__name__)

_EXIT_DRAIN_SECONDS = 1.0
"""How long to wait for the end of output after the process exited (see ``_terminal``)."""

_REAP_TIMEOUT_SECONDS = 10.0
"""How long kill waits for the process to exit after SIGKILL before giving up (logged)."""


def _not_found(terminal_id: str) -> RequestError:
    return RequestError(
        RESOURCE_NOT_FOUND,
        f"Terminal not found: {terminal_id}",
        {"terminalId": terminal_id},
    )


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

    Every terminal's environment carries ``ACPSTACK_TERMINAL=<manager token>:<terminal
    id>`` (set after ``env``, so a request cannot override it): it is how processes that
    leave the terminal's process group are found again when it ends.

    Use it as an async context manager, or call `aclose` when done: that ends every
    terminal and awaits all the work the manager started.

    Args:
        max_terminals: How many terminals may be live at once.
        default_output_byte_limit: The output kept for a terminal created without an
            ``output_byte_limit`` (the last bytes win).
        kill_grace_seconds: How long an ending terminal's processes get between SIGTERM
            and SIGKILL.
    """

    def __init__(
        self,
        *,
        max_terminals: int = 16,
        default_output_byte_limit: int = 16 * 1024 * 1024,
        kill_grace_seconds: float = 2.0,
    ) -> None:
        self.max_terminals: int = max_terminals
        """How many terminals may be live at once."""
        self.default_output_byte_limit: int = default_output_byte_limit
        """The output kept for a terminal created without an ``output_byte_limit``."""
        self.kill_grace_seconds: float = kill_grace_seconds
        """Seconds between SIGTERM and SIGKILL when a terminal ends."""
        self._drain_seconds = _EXIT_DRAIN_SECONDS
        self._terminals: dict[str, Terminal] = {}
        self._starting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._token = secrets.token_hex(8)
        self._started: set[Terminal] = set()  # until asyncio reaped their process
        self._changed: asyncio.Future[None] | None = None

    def changed(self) -> asyncio.Future[None]:
        """A future resolved at the next change of any terminal: new output, exit, release.

        For views that follow running commands: take the future before reading the output,
        so that no change between the read and the wait is missed."""
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _any_changed(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

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
        limit = self._check_create(command, output_byte_limit, cwd)
        argv = self._argv(command, args)
        environment = dict(os.environ)
        if env:
            environment.update(env)
        terminal_id = "term-" + secrets.token_hex(8)
        while terminal_id in self._terminals:  # pragma: no cover - 64 random bits
            terminal_id = "term-" + secrets.token_hex(8)
        environment[MARKER_VARIABLE] = self._marker(terminal_id)
        terminal = Terminal(
            terminal_id, session_id, limit, self._drain_seconds, on_change=self._any_changed
        )
        self._starting += 1
        start = asyncio.ensure_future(self._start(terminal, command, argv, environment, cwd))
        try:
            await asyncio.shield(start)
        except asyncio.CancelledError:
            # Ours to finish, even when the creator is cancelled again while it waits.
            await asyncio.shield(self._spawn(self._abandon(start, terminal)))
            raise
        finally:
            self._starting -= 1
        self._terminals[terminal_id] = terminal
        self._started.add(terminal)
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

    async def _abandon(self, start: asyncio.Future[None], terminal: Terminal) -> None:
        """The caller was cancelled while the process was being started: it may run already
        (cancelling asyncio's start would kill its first process only, never its children).
        Let the start finish, then end it like a released terminal: group and escapees.
        Runs as a task of the manager: `aclose` waits for it."""
        try:
            await asyncio.shield(start)  # never cancel a start (its children would run on)
        except Exception:  # it did not start: nothing to end
            return
        self._terminals[terminal.id] = terminal
        self._started.add(terminal)
        await self._release_terminal(terminal.id)

    def _check_create(self, command: str, output_byte_limit: int | None, cwd: str | None) -> int:
        """Refuse a create request that cannot succeed; return its output byte limit."""
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
        return limit

    @staticmethod
    async def _start(
        terminal: Terminal,
        command: str,
        argv: list[str],
        environment: dict[str, str],
        cwd: str | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: TerminalProtocol(terminal),
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
        assert terminal.transport is transport  # attached in connection_made

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

    def _get(self, session_id: str, terminal_id: str) -> Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            # A terminal of another session is reported exactly like an unknown one.
            raise _not_found(terminal_id)
        return terminal

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        # Owner: these terminals; `close` waits for every task spawned here.
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("terminal background task failed", exc_info=task.exception())

    def _kill_task(self, terminal: Terminal) -> asyncio.Task[None]:
        if terminal.kill_task is None or terminal.kill_task.done():
            terminal.kill_task = self._spawn(self._terminate(terminal))
        return terminal.kill_task

    async def _terminate(self, terminal: Terminal) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._end_group(terminal))
            group.create_task(self._end_escapees(terminal))
        await self._end_escapees(terminal)  # escaped while the group was ending

    async def _end_escapees(self, terminal: Terminal) -> None:
        """End the processes that carry the terminal's marker, wherever they are."""
        try:
            await end_marked(
                marker_needle(self._marker(terminal.id)),
                exclude=self._unreaped(),
                grace=self.kill_grace_seconds,
            )
        except Exception:
            logger.exception("terminal %s: cannot end the processes that left it", terminal.id)

    def _unreaped(self) -> set[int]:
        """Our terminal processes asyncio has not reaped yet: never signalled nor reaped
        by the sweeps (their exit status is the child watcher's)."""
        self._started = {t for t in self._started if not t.exited.is_set()}
        return {t.pid for t in self._started}

    def _marker(self, terminal_id: str) -> str:
        return f"{self._token}:{terminal_id}"

    async def _end_group(self, terminal: Terminal) -> None:
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

    async def _dispose(self, terminal: Terminal) -> None:
        try:
            if not (terminal.done.is_set() and terminal.group_gone):
                await self._kill_task(terminal)
            else:  # the group is gone, but what left it may still run
                await self._end_escapees(terminal)
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
