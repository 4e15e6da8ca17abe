"""Inbound requests start eagerly: a handler that answers without waiting runs to its end
as the request is read, with no task of its own (Python 3.12+: the stdlib's eager tasks;
3.11: `acpstack.rpc._eager`), and one that waits still runs in one real task from its
first line to its last: current_task(), asyncio.timeout, cancellation and contextvars
behave as in any task."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from typing import Any

import pytest

from acpstack import Client
from acpstack.agent import Agent, connect_agent
from acpstack.client import connect_client
from acpstack.transports import memory_pair
from acpstack.wire import RequestError

marker: contextvars.ContextVar[int] = contextvars.ContextVar("marker", default=0)


class Probe(Agent):
    """Extension requests that look at the task and context they run in."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any] | None] = []
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()

    async def ext_method(self, method: str, params: Any) -> Any:
        task = asyncio.current_task()
        self.tasks.append(task)
        if method == "_plain":  # never waits, changes nothing
            async with asyncio.timeout(5):  # needs a current task, even without waiting
                return params
        if method == "_sync":  # never waits, sets a contextvar
            leaked = marker.get()
            marker.set(params)
            async with asyncio.timeout(5):  # needs a current task, even without waiting
                return {"leaked": leaked}
        if method == "_timeout":  # the timeout is set before the first wait
            try:
                async with asyncio.timeout(0.05):
                    await asyncio.Event().wait()
            except TimeoutError:
                return {"timed_out": asyncio.current_task() is task}
        if method == "_wait":  # waits, and must still be the same task afterwards
            marker.set(params)
            self.waiting.set()
            await self.release.wait()
            return {"same": asyncio.current_task() is task, "marker": marker.get()}
        if method == "_cancel_self_then_return":
            assert task is not None
            task.cancel()
            return "returned"
        if method == "_cancel_self_then_wait":
            assert task is not None
            task.cancel()
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise RequestError(-32000, "saw the cancellation") from None
            return "not cancelled"
        if method == "_cancelled_while_waiting":
            assert task is not None
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, task.cancel)  # lands while it waits, two hops on
            try:
                await asyncio.sleep(0)
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise RequestError(-32000, "saw the cancellation") from None
            return "not cancelled"
        raise RequestError.method_not_found(method)


async def test_a_handler_that_never_waits_runs_without_a_task_of_its_own() -> None:
    agent = Probe()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a), client.connection:
        await client.agent.initialize()
        for i in range(1, 20):  # sequential: each one is read and answered alone
            assert await client.agent.call("_plain", i) == i
        assert all(task is not None for task in agent.tasks)
        if sys.version_info < (3, 12):
            # One parked task was the current task of all of them (the first request
            # made it): no task was made for any of them, and it still waits.
            assert len({id(task) for task in agent.tasks[1:]}) == 1
            assert not agent.tasks[-1].done()  # type: ignore[union-attr]


async def test_contextvars_set_by_one_request_are_never_seen_by_the_next() -> None:
    agent = Probe()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a), client.connection:
        await client.agent.initialize()
        answers = [await client.agent.call("_sync", i) for i in range(1, 10)]
        answers += await asyncio.gather(*(client.agent.call("_sync", i) for i in range(1, 10)))
        assert answers == [{"leaked": 0}] * 18


async def test_a_handler_that_waits_keeps_its_task_and_context() -> None:
    agent = Probe()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a), client.connection:
        await client.agent.initialize()
        waiting = [asyncio.create_task(client.agent.call("_wait", i)) for i in range(1, 6)]
        # Answered while those wait: they must not see each other's context either.
        assert await client.agent.call("_sync", 99) == {"leaked": 0}
        agent.release.set()
        results = await asyncio.wait_for(asyncio.gather(*waiting), 10)
        assert results == [{"same": True, "marker": i} for i in range(1, 6)]
        assert await client.agent.call("_sync", 100) == {"leaked": 0}


async def test_a_timeout_set_before_the_first_wait_cancels_the_right_task() -> None:
    agent = Probe()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a), client.connection:
        await client.agent.initialize()
        results = await asyncio.wait_for(
            asyncio.gather(*(client.agent.call("_timeout", i) for i in range(3))), 10
        )
        assert results == [{"timed_out": True}] * 3
        assert await client.agent.call("_sync", 1) == {"leaked": 0}


async def test_a_handler_that_cancels_its_own_task() -> None:
    agent = Probe()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a), client.connection:
        await client.agent.initialize()
        # Returning at once: the answer goes out; the next request runs in a fresh task.
        assert await client.agent.call("_cancel_self_then_return", None) == "returned"
        assert await client.agent.call("_sync", 1) == {"leaked": 0}
        # Waiting after it: the cancellation reaches the handler at its first wait.
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(client.agent.call("_cancel_self_then_wait", None), 10)
        assert info.value.message == "saw the cancellation"
        assert await client.agent.call("_sync", 2) == {"leaked": 0}
        assert agent.tasks[-1] is not agent.tasks[-3]
        # Cancelled later, while it waits for its next step.
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(client.agent.call("_cancelled_while_waiting", None), 10)
        assert info.value.message == "saw the cancellation"


async def test_closing_leaves_no_task_behind() -> None:
    agent = Probe()
    a, b = memory_pair()
    client = connect_client(Client(), b)
    async with connect_agent(agent, a), client.connection:
        await client.agent.initialize()
        for i in range(3):
            await client.agent.call("_sync", i)
        waiting = asyncio.create_task(client.agent.call("_wait", 1))
        await asyncio.wait_for(agent.waiting.wait(), 10)
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(waiting, 10)
    assert asyncio.all_tasks() == {asyncio.current_task()}
