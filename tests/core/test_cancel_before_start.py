"""Every request gets exactly one answer, also when its `$/cancel_request` arrives in the
same read as the request itself.

Found by the fuzzer: the request's task was cancelled before its first step, so the
coroutine ended before its `try` block: no answer was ever sent, and its running slot was
never given back (after `max_inbound_requests` of them, nothing was answered any more).
On Python 3.12+ requests start eagerly, which hides the bug unless a task factory is set,
so each test also runs with one.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from acpstack.agent import Agent, connect_agent
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair


class SlowAgent(Agent):
    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        await asyncio.sleep(0)  # yields once, answers on the next turn
        return acp.NewSessionResponse(session_id="s")


def request(rid: int, method: str, params: Any) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        + b"\n"
    )


def cancel(rid: int) -> bytes:
    return (
        json.dumps(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}}
        ).encode()
        + b"\n"
    )


@pytest.mark.parametrize("task_factory", [False, True], ids=["default", "task-factory"])
async def test_a_request_cancelled_in_the_same_read_is_answered_once(task_factory: bool) -> None:
    loop = asyncio.get_running_loop()
    if task_factory:
        loop.set_task_factory(lambda loop, coro, **kw: asyncio.Task(coro, loop=loop, **kw))
    try:
        agent_side, raw = memory_pair()
        answers: dict[int, list[dict[str, Any]]] = {}
        arrived = asyncio.Event()
        pending = b""

        def collect(data: bytes) -> None:
            nonlocal pending
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                message = json.loads(line)
                answers.setdefault(message["id"], []).append(message)
            arrived.set()

        raw.start_reading(collect, lambda: None)
        connection = connect_agent(SlowAgent(), agent_side, max_inbound_requests=16)
        async with connection:
            raw.write(request(0, "initialize", {"protocolVersion": 1}))
            async with asyncio.timeout(10):
                while 0 not in answers:
                    arrived.clear()
                    await arrived.wait()
            # More pairs than there are running slots: a leaked slot per pair would stall
            # the last request for good.
            chunk = b"".join(
                request(i, "session/new", {"cwd": "/", "mcpServers": []}) + cancel(i)
                for i in range(1, 101)
            )
            raw.write(chunk + request(1000, "session/new", {"cwd": "/", "mcpServers": []}))
            async with asyncio.timeout(10):
                while 1000 not in answers or len(answers) < 102:
                    arrived.clear()
                    await arrived.wait()
        assert sorted(answers) == [0, *range(1, 101), 1000]
        assert all(len(replies) == 1 for replies in answers.values())
        for i in range(1, 101):
            [reply] = answers[i]
            assert reply.get("error", {}).get("code") == -32800 or reply.get("result") == {
                "sessionId": "s"
            }, reply
        assert answers[1000][0]["result"] == {"sessionId": "s"}
        assert connection._running == 0  # every slot given back
    finally:
        loop.set_task_factory(None)
