"""Ending a task we own never hides the owner's own cancellation (`cancel_and_wait`), at the
places that used to swallow it: a caller cancelled there now sees CancelledError.

The owned tasks here are stubborn: cancelled, they wait for the test to let them go, so the
owner is certainly still waiting for them when the owner itself is cancelled."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack._tasks import cancel_and_wait, wait_ended
from acpstack.agent import Agent, MemorySessionStore, SessionAgent, connect_agent
from acpstack.agent._turn import Turn
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair

sys.path.insert(0, str(Path(__file__).parent))
from tests_core_clients import WAIT, Stubborn, cancel_while_waiting  # noqa: E402


async def test_the_owner_cancelled_while_it_waits_sees_cancelled_error() -> None:
    stubborn = Stubborn()
    task = asyncio.create_task(stubborn.run())
    await stubborn.started.wait()
    owner = asyncio.create_task(cancel_and_wait(task))
    await cancel_while_waiting(owner, stubborn)
    assert await wait_ended(task, timeout=WAIT) and task.cancelled()


async def test_the_tasks_own_end_is_not_the_owners_problem() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("the task's own failure")

    failed = asyncio.create_task(fails())
    await asyncio.wait({failed})
    sleeping = asyncio.create_task(asyncio.Event().wait())
    done = asyncio.create_task(asyncio.sleep(0))
    assert await cancel_and_wait(failed, sleeping, done) is True
    assert sleeping.cancelled() and isinstance(failed.exception(), ValueError)


async def test_a_timeout_leaves_a_task_that_did_not_end() -> None:
    stubborn = Stubborn()
    task = asyncio.create_task(stubborn.run())
    await stubborn.started.wait()
    assert await cancel_and_wait(task, timeout=0) is False
    assert not task.done()
    stubborn.release.set()
    assert await wait_ended(task, timeout=WAIT)


class SlowHandler(Agent):
    def __init__(self, stubborn: Stubborn) -> None:
        super().__init__()
        self.stubborn = stubborn

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.stubborn.run()
        return {}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


async def test_closing_a_connection_does_not_hide_the_closers_cancellation() -> None:
    stubborn = Stubborn()
    agent_side, raw = memory_pair()
    raw.start_reading(lambda data: None, lambda: None)
    connection = connect_agent(SlowHandler(stubborn), agent_side)
    connection.start()
    raw.write(line({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}))
    raw.write(line({"id": 1, "method": "_slow", "params": {}}))
    await asyncio.wait_for(stubborn.started.wait(), WAIT)
    closing = asyncio.create_task(connection.aclose())
    await cancel_while_waiting(closing, stubborn)
    await asyncio.wait_for(connection.aclose(), WAIT)


class Outcomes(SessionAgent):
    """Records how each turn ended: its stop reason, or CancelledError going on."""

    def __init__(self) -> None:
        super().__init__(store=MemorySessionStore())
        self.outcomes: list[str] = []
        self.ended = asyncio.Event()
        self.started = asyncio.Event()

    async def prompt(self, turn: Turn) -> acp.StopReason | None:
        self.started.set()
        await asyncio.Event().wait()
        return None

    async def _run_turn(self, turn: Turn) -> acp.StopReason:
        try:
            stop = await super()._run_turn(turn)
        except asyncio.CancelledError:
            self.outcomes.append("CancelledError")
            raise
        finally:
            self.ended.set()
        self.outcomes.append(stop)
        return stop


@pytest.mark.parametrize("how", ["$/cancel_request", "session/cancel", "shutdown"])
async def test_only_the_clients_cancel_ends_a_turn_as_cancelled(how: str) -> None:
    agent = Outcomes()
    agent_side, raw = memory_pair()
    lines: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    def collect(data: bytes) -> None:
        lines.extend(json.loads(x) for x in data.splitlines() if x.strip())
        arrived.set()

    raw.start_reading(collect, lambda: None)
    connection = connect_agent(agent, agent_side)
    connection.start()
    raw.write(line({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}))
    raw.write(line({"id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}))
    async with asyncio.timeout(WAIT):
        while not any(m.get("id") == 1 for m in lines):
            arrived.clear()
            await arrived.wait()
    session_id = next(m for m in lines if m.get("id") == 1)["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    raw.write(line({"id": 2, "method": "session/prompt", "params": prompt}))
    await asyncio.wait_for(agent.started.wait(), WAIT)
    if how == "$/cancel_request":
        raw.write(line({"method": "$/cancel_request", "params": {"requestId": 2}}))
    elif how == "session/cancel":
        raw.write(line({"method": "session/cancel", "params": {"sessionId": session_id}}))
    else:
        await connection.aclose()
    await asyncio.wait_for(agent.ended.wait(), WAIT)
    assert agent.outcomes == (["CancelledError"] if how == "shutdown" else ["cancelled"])
    await connection.aclose()
