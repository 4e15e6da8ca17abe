"""`outlive_cancels`: the end of a turn runs to its end under the client's own cancel, and
its answer is still given when that cancel lands in the gap after the end finished but
before the waiting task woke up (the fuzzer found a prompt left unanswered there)."""

from __future__ import annotations

import asyncio

import pytest

from acpstack._tasks import outlive_cancels


async def test_a_cancel_after_the_end_finished_gets_the_ends_outcome() -> None:
    end: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.ensure_future(outlive_cancels(end, lambda: True))
    await asyncio.sleep(0)  # the waiter now waits on `end`
    end.set_result("end_turn")
    waiter.cancel()  # before the waiter woke up: the gap
    assert await waiter == "end_turn"
    assert waiter.cancelling() == 0  # the absorbed cancel was taken back


async def test_an_absorbed_cancel_lets_the_end_run_on() -> None:
    release = asyncio.Event()

    async def ending() -> str:
        await release.wait()
        return "cancelled"

    end = asyncio.ensure_future(ending())
    waiter = asyncio.ensure_future(outlive_cancels(end, lambda: True))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.sleep(0)
    assert not end.done() and not waiter.done()
    release.set()
    assert await waiter == "cancelled"


async def test_a_cancel_it_does_not_absorb_ends_both() -> None:
    end = asyncio.ensure_future(asyncio.Event().wait())
    waiter = asyncio.ensure_future(outlive_cancels(end, lambda: False))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.wait([end])
    assert end.cancelled()


async def test_an_end_that_was_cancelled_is_not_waited_for_again() -> None:
    end: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.ensure_future(outlive_cancels(end, lambda: True))
    await asyncio.sleep(0)
    end.cancel()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, 5)


async def test_an_end_that_failed_raises_its_error_to_the_waiter() -> None:
    end: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.ensure_future(outlive_cancels(end, lambda: True))
    await asyncio.sleep(0)
    end.set_exception(ValueError("store down"))
    waiter.cancel()
    with pytest.raises(ValueError, match="store down"):
        await waiter
