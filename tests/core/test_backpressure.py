"""Reading pauses when handlers fall behind, resumes when they catch up, and loses nothing."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from pathlib import Path
from typing import Any

from acpstack import Client
from acpstack.agent import Agent, connect_agent
from acpstack.client import connect_client
from acpstack.rpc._connection import QUEUE_HIGH_WATER
from acpstack.schema import v1 as acp
from acpstack.transports import MemoryTransport, SubprocessTransport, memory_pair

sys.path.insert(0, str(Path(__file__).parent))
from tests_core_clients import SlowCollector  # noqa: E402

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "core_agent.py")]


class CountingSubprocess(SubprocessTransport):
    """The real subprocess transport, counting how often the runtime paused reading."""

    pauses = 0
    resumes = 0

    def pause_reading(self) -> None:
        self.pauses += 1
        super().pause_reading()

    def resume_reading(self) -> None:
        self.resumes += 1
        super().resume_reading()


async def test_a_flood_of_updates_pauses_reading_and_loses_nothing() -> None:
    count = QUEUE_HIGH_WATER * 6
    client = SlowCollector()
    transport = await CountingSubprocess.spawn(AGENT)
    conn = connect_client(client, transport)
    async with conn.connection:
        await conn.agent.initialize(acp.InitializeRequest(protocol_version=1))
        sid = (
            await conn.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        ).session_id
        prompt = acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=f"stream {count}")])
        answer = await asyncio.wait_for(conn.agent.session_prompt(prompt), 60)
        assert answer.stop_reason == "end_turn"
        # Every update arrived, in order, before the answer to the prompt.
        assert client.texts == [f"{i:08d}" for i in range(count)]
        assert transport.pauses >= 1
        assert transport.resumes == transport.pauses


class Gate(Agent):
    """Extension requests block until released; records which ones ran."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started: list[int] = []
        self.first_started = asyncio.Event()
        self.marker = asyncio.Event()

    async def ext_method(self, method: str, params: Any) -> Any:
        self.started.append(params)
        self.first_started.set()
        await self.release.wait()
        return params

    async def ext_notification(self, method: str, params: Any) -> None:
        self.marker.set()  # everything the client sent before the marker has been read


async def read_so_far(client: Any, agent: Gate) -> None:
    """Wait until the agent has read everything the client sent until now."""
    await asyncio.sleep(0)  # one loop turn: tasks that were just created send their requests
    agent.marker.clear()
    await client.agent.notify("_marker", {})
    await asyncio.wait_for(agent.marker.wait(), 10)


async def test_requests_beyond_the_limit_wait_in_line_and_can_be_cancelled_there() -> None:
    agent = Gate()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a, max_inbound_requests=2), client.connection:
        await client.agent.initialize()
        calls = [asyncio.create_task(client.agent.call("_gate", i)) for i in range(6)]
        await read_so_far(client, agent)
        assert agent.started == [0, 1]  # the other four wait in line
        calls[3].cancel()  # sends $/cancel_request for a request that has not started
        await read_so_far(client, agent)
        agent.release.set()
        results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 10)
        assert results[:3] + results[4:] == [0, 1, 2, 4, 5]
        assert isinstance(results[3], asyncio.CancelledError)
        assert sorted(agent.started) == [0, 1, 2, 4, 5]  # the cancelled one never ran
        # The connection is still fine afterwards.
        assert await client.agent.call("_gate", 9) == 9


class CountingMemory(MemoryTransport):
    pauses = 0

    def __init__(self) -> None:
        super().__init__()
        self.paused = asyncio.Event()

    def pause_reading(self) -> None:
        self.pauses += 1
        self.paused.set()
        super().pause_reading()


async def test_a_long_line_of_waiting_requests_pauses_reading_until_it_shrinks() -> None:
    agent = Gate()
    a, b = CountingMemory(), MemoryTransport()
    a.peer, b.peer = b, a
    client = connect_client(Client(), b)
    agent_conn = connect_agent(agent, a, max_inbound_requests=1, max_waiting_requests=4)
    async with agent_conn, client.connection:
        await client.agent.initialize()
        calls = [asyncio.create_task(client.agent.call("_gate", i)) for i in range(40)]
        await asyncio.wait_for(a.paused.wait(), 10)
        assert a.pauses >= 1
        assert agent.started == [0]
        agent.release.set()
        assert await asyncio.wait_for(asyncio.gather(*calls), 10) == list(range(40))
        assert agent.started == list(range(40))


async def test_a_long_line_of_requests_that_answer_at_once_drains_without_recursion() -> None:
    # Once released, every waiting request answers without awaiting anything. On Python
    # 3.12+ such a handler runs to the end inside the launch (eager start), so launching
    # the next waiting request from the previous one's cleanup must not nest: 3,000 deep
    # would be far past the recursion limit.
    agent = Gate()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    count = 3000
    async with (
        connect_agent(agent, a, max_inbound_requests=1, max_waiting_requests=count * 2),
        client.connection,
    ):
        await client.agent.initialize()
        calls = [asyncio.create_task(client.agent.call("_gate", i)) for i in range(count)]
        await read_so_far(client, agent)
        assert agent.started == [0]
        agent.release.set()
        assert await asyncio.wait_for(asyncio.gather(*calls), 30) == list(range(count))
        assert agent.started == list(range(count))
        assert await client.agent.call("_gate", -1) == -1


class TaskAware(Agent):
    """Extension requests that need to run inside a task of their own."""

    def __init__(self) -> None:
        self.marker: contextvars.ContextVar[int] = contextvars.ContextVar("marker", default=0)

    async def ext_method(self, method: str, params: Any) -> Any:
        task = asyncio.current_task()
        assert task is not None
        leaked = self.marker.get()  # set by an earlier request: must not be seen here
        self.marker.set(params)
        async with asyncio.timeout(5):  # needs the current task
            if params % 2:
                await asyncio.sleep(0)  # half of them really suspend
        async with asyncio.TaskGroup() as group:  # so does a task group
            child = group.create_task(asyncio.sleep(0, result=params))
        return {"leaked": leaked, "child": child.result(), "task": id(task) != 0}


async def test_handlers_run_in_their_own_task_and_context_whether_or_not_they_await() -> None:
    # On Python 3.12+ a handler's first step runs eagerly; it must still be a real task
    # (asyncio.timeout, TaskGroup) with a context of its own.
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(TaskAware(), a), client.connection:
        await client.agent.initialize()
        results = await asyncio.gather(*(client.agent.call("_aware", i) for i in range(1, 50)))
        assert results == [{"leaked": 0, "child": i, "task": True} for i in range(1, 50)]
