"""A message too large to read is dropped on the receiving side, logged once as a warning
and reported to the application, and the connection goes on: over real pipes, for an
acpstack agent process (`Agent.on_message_dropped`) and for a `ClientRuntime` talking to
one (`on_dropped`, `dropped_messages`). `acpstack chat`'s notice is in
tests/cli/test_chat_limits.py; the wire layer's part in tests/unit/test_poisoned_input.py."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acpstack import spawn_agent
from acpstack.client import ClientRuntime
from acpstack.wire import DroppedMessage

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "dropping_agent.py")]
LIMIT = 64 * 1024


async def test_an_agent_process_reports_an_oversized_notification_and_goes_on() -> None:
    proc = await asyncio.create_subprocess_exec(
        *AGENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "MAX_MESSAGE_SIZE": str(LIMIT)},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        await proc.stdin.drain()

    async def reply() -> dict[str, Any]:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert line, "the agent closed stdout"
        answer: dict[str, Any] = json.loads(line)
        return answer

    try:
        await send(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        assert (await reply())["id"] == 1
        big = {"sessionId": "s1", "_meta": {"pad": "x" * (2 * LIMIT)}}
        await send({"jsonrpc": "2.0", "method": "session/cancel", "params": big})
        # The sender learns of it (a notification has no id to answer: id null)...
        answer = await reply()
        assert answer["id"] is None and answer["error"]["code"] == -32700, answer
        # ...the agent's application too, and the connection goes on.
        await send({"jsonrpc": "2.0", "id": 2, "method": "_test/dropped", "params": {}})
        answer = await reply()
        assert answer["id"] == 2
        [dropped] = answer["result"]["dropped"]
        assert (dropped["reason"], dropped["method"], dropped["session_id"]) == (
            "too_large",
            "session/cancel",
            "s1",
        )
        assert dropped["size"] > 2 * LIMIT
        assert f"exceeds the limit of {LIMIT} bytes" in dropped["detail"]
    finally:
        proc.stdin.close()
        stderr = (await asyncio.wait_for(proc.stderr.read(), 20)).decode()
        await asyncio.wait_for(proc.wait(), 20)
    warnings = [line for line in stderr.splitlines() if line.startswith("WARNING:")]
    assert len(warnings) == 1, stderr
    assert "dropped a message" in warnings[0] and "session/cancel" in warnings[0]
    assert "Traceback" not in stderr
    assert proc.returncode == 0


async def test_a_client_runtime_reports_an_oversized_update_from_an_agent_process() -> None:
    dropped: list[DroppedMessage] = []
    runtime = ClientRuntime(on_dropped=dropped.append)
    async with spawn_agent(AGENT, runtime, max_message_size=LIMIT):
        await runtime.initialize()
        sid = (await runtime.new_session("/")).session_id
        result = await runtime.prompt(sid, f"big {2 * LIMIT}")
        assert result.stop_reason == "end_turn"
        state = runtime.sessions[sid].state
        [message] = dropped
        assert (message.reason, message.method, message.session_id) == (
            "too_large",
            "session/update",
            sid,
        )
        assert message.size > 2 * LIMIT
        assert runtime.dropped_messages == 1 and state.dropped_messages == 1
        # The update that followed it arrived: nothing else was lost.
        assert [m.text for m in state.messages if m.speaker == "agent"] == ["done"]
        # And the connection goes on.
        assert (await runtime.prompt(sid, "small")).stop_reason == "end_turn"
        assert runtime.dropped_messages == 1
