"""A 1 MB id, method or params key sent to `acpstack agent` over real pipes is answered (or
refused) and the request after it too: nothing a peer sends costs the event loop more than
linear time in its size (the redacting log formatter once took minutes over a long id)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BIG = "x" * 1_000_000
ANSWER_TIMEOUT = 60  # generous: a loaded machine is slow, a quadratic scan is hours
CASES = {
    "id": {"jsonrpc": "2.0", "id": BIG, "method": "session/prompt", "params": {}},
    "method": {"jsonrpc": "2.0", "id": 2, "method": BIG, "params": {}},
    "key": {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/new",
        "params": {"cwd": "/tmp", "mcpServers": [], BIG: 1},
    },
    "session id": {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "session/prompt",
        "params": {"sessionId": BIG, "prompt": []},
    },
}


class Agent:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def answers(self, count: int) -> dict[Any, dict[str, Any]]:
        """The next `count` responses by id (notifications in between are skipped)."""
        assert self.process.stdout is not None
        found: dict[Any, dict[str, Any]] = {}
        while len(found) < count:
            line = await asyncio.wait_for(self.process.stdout.readline(), ANSWER_TIMEOUT)
            assert line, "the agent closed its stdout"
            message = json.loads(line)
            if "id" in message and "method" not in message:
                found[message["id"]] = message
        return found


@pytest.mark.parametrize("case", list(CASES))
async def test_a_1_mb_value_is_answered_and_so_is_the_next_request(
    case: str, tmp_path: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db")),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=4 * 1024 * 1024,  # answers quote the long value back
    )
    agent = Agent(process)
    try:
        await agent.send(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        assert "result" in (await agent.answers(1))[0]
        big = CASES[case]
        await agent.send(big)
        await agent.send(
            {
                "jsonrpc": "2.0",
                "id": "next",
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            }
        )
        answers = await agent.answers(2)
        assert "sessionId" in answers["next"]["result"]
        answer = answers[big["id"]]
        if case == "key":  # an unknown key is ignored, as the schema allows
            assert "sessionId" in answer["result"]
        else:
            assert answer["error"]["code"] in (-32602, -32601, -32002), answer["error"]
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), ANSWER_TIMEOUT)
        finally:
            if process.returncode is None:  # it failed the test: leave nothing running
                process.kill()
                await process.wait()
