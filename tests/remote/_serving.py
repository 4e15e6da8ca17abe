"""Helpers for remote ACP tests: an `AgentServer` on uvicorn in this process (a real
socket on 127.0.0.1), or `acpstack serve` as a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from acpstack.server import AgentServer, bind_socket, serve_remote

PEERS = Path(__file__).resolve().parent / "peers"
SCRIPTED = f"{PEERS / 'scripted_agent.py'}:ScriptedAgent"
PERSISTENT = f"{PEERS / 'scripted_agent.py'}:PersistentAgent"
STDIO_AGENT = [sys.executable, str(PEERS / "stdio_agent.py")]
URL_LINE = re.compile(r"on (https?)://([^ ]+):(\d+)/acp")


def load_scripted() -> Any:
    sys.path.insert(0, str(PEERS))
    import scripted_agent

    return scripted_agent


@contextlib.asynccontextmanager
async def running(
    app: Any, *, lifespan_app: AgentServer | None = None, **options: Any
) -> AsyncIterator[str]:
    """Serve `app` (an AgentServer, or an ASGI app wrapping `lifespan_app`) on 127.0.0.1
    (a free port) for the block; yields the http:// URL."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_remote(
            lifespan_app or app,
            asgi=app if lifespan_app else None,
            sock=sock,
            on_ready=lambda _s: ready.set(),
            stop=stop,
            **options,
        )
    )
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done():
        task.result()
    assert ready.is_set(), "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


class Served:
    """`acpstack serve` running as a subprocess; `stderr` collects its lines."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.stderr: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.url = ""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def wait_line(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first line from now on that `pattern` matches."""
        while True:
            line = self._lines.get(timeout=timeout)
            assert line is not None, f"acpstack serve exited: {''.join(self.stderr)}"
            match = re.search(pattern, line)
            if match:
                return match

    def wait_url(self, timeout: float = 30) -> str:
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"acpstack serve printed no URL; stderr so far: {''.join(self.stderr)}"
                ) from None
            if line is None:
                raise AssertionError(
                    f"acpstack serve exited {self.proc.wait()}: {''.join(self.stderr)}"
                )
            match = URL_LINE.search(line)
            if match:
                scheme, host, port = match.groups()
                self.port = int(port)
                self.url = f"{scheme}://127.0.0.1:{port}/acp"
                return self.url

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=20)


TOKEN_OPTIONS = ("--token", "--token-env", "--token-file", "--no-token")


@contextlib.contextmanager
def serve_process(
    *args: str,
    env: dict[str, str] | None = None,
    wait: bool = True,
    open_by_default: bool = True,
    launcher: tuple[str, ...] = ("-m", "acpstack"),
) -> Iterator[Served]:
    """`acpstack serve --port 0 ARGS`; without a token option in ARGS, with `--no-token`
    (the tests' clients carry no token unless they give one) unless `open_by_default` is
    False. `launcher`: how Python runs acpstack (a script that sets things up first)."""
    argv = [sys.executable, *launcher, "serve", "--port", "0", *args]
    if open_by_default and not any(arg.split("=")[0] in TOKEN_OPTIONS for arg in args):
        argv.insert(argv.index("--port"), "--no-token")
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    served = Served(proc)
    try:
        if wait:
            served.wait_url()
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        served.reader.join(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def sse_messages(data: bytes) -> list[bytes]:
    """The `data:` payloads of a raw SSE body (an independent parser, for probes)."""
    out = []
    for block in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        if lines:
            out.append(b"\n".join(lines))
    return out
