"""Ending tasks we own: the one helper every layer uses (DESIGN.md: cancellation is never
swallowed). Top-level and private, like `_version`, so that transports/, local/ and every
layer above can share it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_and_wait(*tasks: asyncio.Future[Any], timeout: float | None = None) -> bool:
    """Cancel tasks we own and wait until they have ended, however they end (cancelled,
    failed or returned: their owner is ending them, not reading them). True when all ended
    (False only once `timeout` seconds passed).

    Only the tasks are cancelled: when the task calling this is itself cancelled while it
    waits, CancelledError reaches it (`asyncio.wait` never converts it), so an owner shutting
    down cannot hide its own cancellation the way `suppress(CancelledError)` around
    `await task` did; a cancellation the tasks raise themselves is theirs and stays here."""
    for task in tasks:
        task.cancel()
    return await wait_ended(*tasks, timeout=timeout)


async def wait_ended(*tasks: asyncio.Future[Any], timeout: float | None = None) -> bool:
    """Wait until the tasks ended (without cancelling them), their outcome read so that none
    is logged as never retrieved; CancelledError only when the caller itself is cancelled."""
    pending = {task for task in tasks if not task.done()}
    if pending:
        await asyncio.wait(pending, timeout=timeout)
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # read: the owner ends the task, it does not report for it
    return all(task.done() for task in tasks)


async def outlive_cancels(end: asyncio.Future[T], absorb: Callable[[], bool]) -> T:
    """Wait for `end`, which must run to its end even when the waiting task is cancelled
    for a reason `absorb()` accepts (the client's own cancel of a turn whose ending is
    under way): such a cancellation is taken back and the wait goes on. Any other
    cancellation ends `end` too and reaches the caller.

    A cancel that lands after `end` finished but before the waiting task woke up is
    absorbed the same way, and `end`'s outcome returned: the answer it carries is still
    owed (raising there left the request unanswered)."""
    while True:
        try:
            return await asyncio.shield(end)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if end.cancelled() or current is None or not absorb():
                end.cancel()
                raise
            current.uncancel()
