"""`CancelScope` (what `ToolCallHandle.cancellable()` and `Turn.run_command` build on) and
the v2 shape of a cancelled tool call. In-process, no agent: the wire cases are in
tests/v2/test_tool_cancel_v2.py."""

from __future__ import annotations

import asyncio

import pytest

from acpstack.agent import CancelScope
from acpstack.agent._cancel import mark_cancelled
from acpstack.events._v2 import tool_call_to_v2
from acpstack.schema import v1 as acp

pytestmark = pytest.mark.timeout(10)


async def started_in_scope(scope: CancelScope) -> tuple[asyncio.Task[str], asyncio.Event]:
    """A task that enters `scope`, says so, waits forever inside it, then returns "after"."""
    inside = asyncio.Event()
    cleaned = asyncio.Event()

    async def work() -> str:
        async with scope:
            inside.set()
            try:
                await asyncio.Event().wait()
            finally:
                cleaned.set()
        return "after"

    task = asyncio.ensure_future(work())
    await inside.wait()
    return task, cleaned


async def test_cancel_ends_at_the_scope() -> None:
    scope = CancelScope()
    task, cleaned = await started_in_scope(scope)
    scope.cancel()
    assert await task == "after"  # the code after the scope ran
    assert scope.cancelled and scope.cancel_called and cleaned.is_set()
    assert task.cancelling() == 0


async def test_the_tasks_own_cancellation_passes_through() -> None:
    for also_scope in (False, True):
        scope = CancelScope()
        task, _ = await started_in_scope(scope)
        if also_scope:
            scope.cancel()
        task.cancel()  # e.g. session/cancel of the turn
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not scope.cancelled, also_scope


async def test_cancel_before_entering_and_after_leaving() -> None:
    early = CancelScope()
    early.cancel()
    reached = []

    async def work() -> None:
        async with early:
            await asyncio.Event().wait()  # cancelled at its first await
        reached.append("after")

    await asyncio.wait_for(work(), 5)
    assert early.cancelled and reached == ["after"]

    late = CancelScope()
    async with late:
        pass
    late.cancel()  # over: nothing happens, and no cancellation is left pending
    assert not late.cancel_called and not late.cancelled
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0
    with pytest.raises(RuntimeError):
        async with late:
            pass


def test_a_cancelled_tool_call_on_each_wire() -> None:
    update = acp.SessionUpdateToolCallUpdate(tool_call_id="t1", status="completed")
    update.meta = {"vendor": 1}
    mark_cancelled(update)
    # The runtime's model (the history, and v1) says failed, with the marker...
    assert update.status == "failed"
    assert update.meta == {"vendor": 1, "acpstack/status": "cancelled"}
    plain = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "failed",
        "_meta": update.meta,
    }
    # ... which v2 shows as its own status, without the marker.
    assert tool_call_to_v2(plain) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "cancelled",
        "_meta": {"vendor": 1},
    }
    plain["_meta"] = {"acpstack/status": "cancelled"}
    assert "_meta" not in tool_call_to_v2(plain)
    plain["_meta"] = {"acpstack/status": "other"}
    assert tool_call_to_v2(plain)["status"] == "failed"
