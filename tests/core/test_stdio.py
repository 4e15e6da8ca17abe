"""Serving on stdio: stray print() output never reaches the wire; EOF ends the agent, also
in the middle of a turn, without an error."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "core_agent.py")]


def test_prints_go_to_stderr_and_stdin_eof_exits_cleanly() -> None:
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []},
        },
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run(AGENT, input=stdin, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert "noise from initialize" in proc.stderr
    assert "noise" not in proc.stdout


async def test_stdin_eof_during_a_turn_ends_the_agent_quietly() -> None:
    # The turn waits on the client (fs/read_text_file) when stdin closes: the call fails
    # with ConnectionClosed, and nobody is left to answer. That is no error of the agent's:
    # no ERROR line, no traceback, exit code 0.
    proc = await asyncio.create_subprocess_exec(
        *AGENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def call(rid: int, method: str, params: dict[str, Any]) -> None:
        assert proc.stdin is not None
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        await proc.stdin.drain()

    async def next_message() -> dict[str, Any]:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert line, "the agent closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    try:
        caps = {"fs": {"readTextFile": True}}
        await call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        assert "result" in await next_message()
        await call(1, "session/new", {"cwd": "/", "mcpServers": []})
        sid = (await next_message())["result"]["sessionId"]
        prompt = [{"type": "text", "text": "ask /etc/hostname"}]
        await call(2, "session/prompt", {"sessionId": sid, "prompt": prompt})
        while (await next_message()).get("method") != "fs/read_text_file":
            pass
        proc.stdin.close()  # instead of an answer
        stderr = (await asyncio.wait_for(proc.stderr.read(), 20)).decode()
        assert await asyncio.wait_for(proc.wait(), 20) == 0, stderr
    finally:
        if proc.returncode is None:  # failed above: never leave the agent waiting on us
            proc.kill()
            await proc.wait()
    assert "ERROR" not in stderr and "Traceback" not in stderr, stderr
