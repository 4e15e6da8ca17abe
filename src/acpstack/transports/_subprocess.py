"""Spawn a peer process and talk to it over its stdin/stdout."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from acpstack.transports._streams import StreamTransport

log = logging.getLogger("acpstack.peer")

StderrCallback = Callable[[str], None]


class SubprocessTransport(StreamTransport):
    """The peer's stdin/stdout as a transport, its stderr drained continuously.

    Shutdown ladder (several real agents ignore stdin EOF): close stdin, wait, SIGTERM
    the process group, wait, SIGKILL it.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        *,
        stderr_callback: StderrCallback | None,
        stderr_tail_lines: int,
        shutdown_timeout: float,
        description: str,
    ) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin)
        self.process = process
        self._stderr_callback = stderr_callback
        self._stderr_tail: deque[str] = deque(maxlen=stderr_tail_lines)
        self._shutdown_timeout = shutdown_timeout
        self._description = description
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

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
    ) -> SubprocessTransport:
        """Start `command` (an argv list, or a shell command line as one string)."""
        full_env = dict(os.environ) if inherit_env else {}
        if env:
            full_env.update(env)
        common = dict(
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,  # so the shutdown ladder reaches the agent's children too
        )
        if isinstance(command, str):
            process = await asyncio.create_subprocess_shell(command, **common)  # type: ignore[arg-type]
            description = command
        else:
            argv = list(command)
            if not argv:
                raise ValueError("empty agent command")
            process = await asyncio.create_subprocess_exec(*argv, **common)  # type: ignore[arg-type]
            description = " ".join(argv)
        return cls(process, stderr_callback=stderr_callback, stderr_tail_lines=stderr_tail_lines,
                   shutdown_timeout=shutdown_timeout, description=description)

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                line = await stream.read(65536)
            except (ConnectionError, OSError):
                return
            if not line:
                return
            text = line.decode("utf-8", errors="replace").rstrip("\r\n")
            self._stderr_tail.append(text)
            if self._stderr_callback is not None:
                try:
                    self._stderr_callback(text)
                except Exception:  # a UI callback must not stop the draining
                    log.exception("stderr callback failed")
            else:
                log.debug("peer stderr: %s", text)

    async def read(self) -> bytes:
        data = await super().read()
        if not data:
            # stdout closed: give the process a moment to exit and its stderr to drain, so
            # the ConnectionClosed error can say how it ended (exit code, last stderr lines).
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.process.wait()), 1.0)
            if self.process.returncode is not None:
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        return data

    def stderr_tail(self) -> list[str]:
        return list(self._stderr_tail)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def close_reason(self) -> str | None:
        code = self.process.returncode
        if code is None:
            return None
        how = f"exited with code {code}" if code >= 0 else f"was killed by {_signal_name(-code)}"
        tail = "\n".join(self.stderr_tail()[-20:])
        reason = f"peer process `{self._description}` {how}"
        return f"{reason}; last stderr lines:\n{tail}" if tail else reason

    async def wait_exit(self) -> int:
        return await self.process.wait()

    async def close(self) -> None:
        await super().close()  # closes stdin: the polite request to exit
        await self._terminate()
        if not self._stderr_task.done():
            try:
                await asyncio.wait_for(self._stderr_task, 1.0)
            except (TimeoutError, asyncio.CancelledError):
                self._stderr_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._stderr_task

    async def _terminate(self) -> None:
        proc = self.process
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if proc.returncode is not None:
                break
            if sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            try:
                await asyncio.wait_for(proc.wait(), self._shutdown_timeout if sig != signal.SIGKILL else 10)
            except TimeoutError:
                continue
        # Children of the agent that outlived it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
