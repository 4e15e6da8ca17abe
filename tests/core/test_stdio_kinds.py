"""Serving on stdio whatever stdin and stdout are: regular files, /dev/null, pipes, one
socket for both, a pseudo-terminal. Real `acpstack agent` processes, on both event loops."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
import tty
from pathlib import Path
from typing import Any

import pytest

ACPSTACK = [sys.executable, "-m", "acpstack"]
CORE_AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "core_agent.py")]
LOOPS = pytest.mark.parametrize("loop", ["uvloop", "asyncio"])


def env_for(loop: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return dict(
        os.environ, ACPSTACK_EVENT_LOOP=loop, ACPSTACK_STORE=str(tmp_path / "sessions.db"), **extra
    )


def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


INITIALIZE = request(0, "initialize", {"protocolVersion": 1})


def session_file(tmp_path: Path, session_id: str = "SID") -> Path:
    path = tmp_path / "requests.ndjson"
    lines = [
        INITIALIZE,
        request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []}),
        request(
            2,
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": "stream 3"}]},
        ),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def answers(text: str) -> dict[Any, dict[str, Any]]:
    messages = [json.loads(line) for line in text.splitlines() if line.strip()]
    found: dict[Any, dict[str, Any]] = {}
    for message in messages:
        if "method" not in message:
            assert message["id"] not in found, f"two answers to request {message['id']}"
            found[message["id"]] = message
    return found


def assert_quiet(stderr: str) -> None:
    assert "Traceback" not in stderr and "error" not in stderr.lower() and "Fatal" not in stderr, (
        stderr
    )


@LOOPS
def test_requests_from_a_file_answers_to_a_file(tmp_path: Path, loop: str) -> None:
    out = tmp_path / "out.ndjson"
    with session_file(tmp_path).open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run(
            [*ACPSTACK, "agent"],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env_for(loop, tmp_path),
            timeout=30,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    assert_quiet(done.stderr)
    found = answers(out.read_text())
    assert set(found) == {0, 1, 2}  # every request answered once, then a clean exit at EOF
    assert found[0]["result"]["agentInfo"]["name"] == "acpstack-agent"


@LOOPS
def test_a_whole_session_from_a_file(tmp_path: Path, loop: str) -> None:
    out = tmp_path / "out.ndjson"
    with session_file(tmp_path, "fixed").open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run(
            CORE_AGENT,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env_for(loop, tmp_path, SESSION_ID="fixed"),
            timeout=30,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    found = answers(out.read_text())
    assert "result" in found[1], found[1]
    assert found[1]["result"]["sessionId"] == "fixed"
    assert found[2]["result"]["stopReason"] == "end_turn"


@LOOPS
def test_stdin_dev_null_exits_at_once(tmp_path: Path, loop: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [*ACPSTACK, "agent"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env_for(loop, tmp_path),
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert_quiet(done.stderr)
    assert time.monotonic() - started < 15


@LOOPS
@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
def test_stdout_dev_null(tmp_path: Path, loop: str, stdin_kind: str) -> None:
    requests = session_file(tmp_path)
    with requests.open("rb") as file:
        done = subprocess.run(
            [*ACPSTACK, "agent"],
            stdin=file if stdin_kind == "file" else None,
            input=requests.read_bytes() if stdin_kind == "pipe" else None,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env_for(loop, tmp_path),
            timeout=30,
        )
    assert done.returncode == 0, done.stderr
    assert_quiet(done.stderr.decode())


@LOOPS
def test_stdin_not_readable_is_one_clear_line(tmp_path: Path, loop: str) -> None:
    with (tmp_path / "wrong").open("wb") as write_only:
        done = subprocess.run(
            [*ACPSTACK, "agent"],
            stdin=write_only,
            capture_output=True,
            text=True,
            env=env_for(loop, tmp_path),
            timeout=30,
        )
    assert done.returncode == 1
    assert done.stderr == "error: cannot serve ACP on stdio: stdin is not open for reading\n"
    assert done.stdout == ""


class LineClient:
    """Talks NDJSON over a descriptor: sends a request, waits (select, with a deadline) for its answer."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd, self.read_fd = write_fd, read_fd
        self.buffer = b""
        self.notifications: list[dict[str, Any]] = []

    def call(self, message: dict[str, Any], timeout: float = 20) -> dict[str, Any]:
        os.write(self.write_fd, json.dumps(message).encode() + b"\n")
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buffer:
                ready, _, _ = select.select(
                    [self.read_fd], [], [], max(0.0, deadline - time.monotonic())
                )
                assert ready, f"no answer to {message['method']} within {timeout} s"
                chunk = os.read(self.read_fd, 65536)
                assert chunk, "the agent closed its output"
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            incoming = json.loads(line)
            if incoming.get("id") == message["id"] and "method" not in incoming:
                return incoming
            self.notifications.append(incoming)

    def session(self, cwd: str) -> None:
        """initialize, session/new, one prompt: the answers are all right."""
        assert self.call(INITIALIZE)["result"]["agentInfo"]["name"] == "acpstack-agent"
        sid = self.call(request(1, "session/new", {"cwd": cwd, "mcpServers": []}))["result"][
            "sessionId"
        ]
        prompt = request(
            2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/help"}]}
        )
        assert self.call(prompt)["result"] == {"stopReason": "end_turn"}
        texts = [
            n["params"]["update"].get("content", {}).get("text", "")
            for n in self.notifications
            if n.get("method") == "session/update"
        ]
        assert "/read" in "".join(texts)


@LOOPS
@pytest.mark.parametrize("shape", ["one socket for both", "a socket each"])
def test_sockets(tmp_path: Path, loop: str, shape: str) -> None:
    mine_in, theirs_in = socket.socketpair()
    mine_out, theirs_out = (
        (mine_in, theirs_in) if shape == "one socket for both" else socket.socketpair()
    )
    with mine_in, theirs_in, mine_out, theirs_out:
        proc = subprocess.Popen(
            [*ACPSTACK, "agent"],
            stdin=theirs_in,
            stdout=theirs_out,
            stderr=subprocess.PIPE,
            env=env_for(loop, tmp_path),
        )
        theirs_in.close()
        theirs_out.close()
        try:
            LineClient(mine_in.fileno(), mine_out.fileno()).session(str(tmp_path))
            mine_in.shutdown(socket.SHUT_WR)  # end of input
            assert proc.wait(20) == 0
        finally:
            proc.kill()
            _, stderr = proc.communicate(timeout=10)
    assert_quiet(stderr.decode())


@LOOPS
def test_a_pseudo_terminal(tmp_path: Path, loop: str) -> None:
    master, slave = pty.openpty()
    tty.setraw(slave)  # no echo, no line editing: the terminal carries the bytes as they are
    proc = subprocess.Popen(
        [*ACPSTACK, "agent"],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env_for(loop, tmp_path),
    )
    os.close(slave)
    try:
        LineClient(master, master).session(str(tmp_path))
        os.close(master)  # hang up: the agent reads end of input
        master = -1
        assert proc.wait(20) == 0
    finally:
        if master >= 0:
            os.close(master)
        proc.kill()
        _, stderr = proc.communicate(timeout=10)
    assert_quiet(stderr.decode())


async def test_a_file_is_read_one_chunk_at_a_time_and_pausing_holds_the_thread(
    tmp_path: Path,
) -> None:
    import asyncio

    from acpstack.transports._blocking import READ_CHUNK, ThreadReader
    from acpstack.transports._plumbing import Inbox

    path = tmp_path / "big"
    path.write_bytes(b"x" * (READ_CHUNK * 4 + 10))
    chunks: list[bytes] = []
    got_one, ended = asyncio.Event(), asyncio.Event()
    reader: ThreadReader

    def on_data(data: bytes) -> None:
        chunks.append(data)
        if len(chunks) == 1:
            reader.pause()  # as the runtime does when too much is waiting
            got_one.set()

    inbox = Inbox()
    inbox.attach(on_data, ended.set)
    reader = ThreadReader(os.open(path, os.O_RDONLY), inbox, asyncio.get_running_loop())
    reader.start()
    await asyncio.wait_for(got_one.wait(), 10)
    assert (
        not reader._go.is_set()
    )  # the thread waits for its turn: nothing more is read while paused
    assert len(chunks) == 1
    reader.resume()
    await asyncio.wait_for(ended.wait(), 10)
    assert b"".join(chunks) == path.read_bytes()
    reader.close()
