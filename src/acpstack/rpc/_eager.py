"""Eager start of inbound requests on Python 3.11: no Task for a handler that never waits.

Most handlers answer without waiting for anything. Python 3.12's eager tasks run such a
coroutine to its end at once, with no loop callback, no loop turn and no entry in the
loop's task registry (a pure-Python WeakSet on 3.11). `EagerStarter` does the same on
3.11. A parked "spare" Task (waiting on a future of its own) is made the current task while
the coroutine's first step runs, in the spare's context:

- the coroutine ends in that step: nothing else happens, the spare waits for the next one
  (unless the step changed its context or cancelled it: then it is retired, so no
  request sees what another one left behind);
- the coroutine waits: the spare adopts it and goes on with it as its own task, from the
  future it waits on, and a new spare is parked. `asyncio.current_task()`, `asyncio.timeout`,
  TaskGroups, contextvars and cancellation see one task from the first line to the last.

It uses asyncio's `_enter_task`/`_leave_task` (the functions Python 3.12's eager tasks
use), and runs only on 3.11: 3.12+ has eager tasks.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from asyncio.tasks import _current_tasks, _enter_task, _leave_task  # type: ignore[attr-defined]
from collections.abc import Coroutine, Generator
from typing import Any


class _Spare:
    """A parked task and what it needs to adopt a coroutine."""

    __slots__ = ("task", "box", "context", "pristine")
    task: asyncio.Task[None]  # set once the task is made

    def __init__(self, box: asyncio.Future[Any], context: contextvars.Context) -> None:
        self.box = box  # receives (coroutine, what it waits on) when a request is adopted
        self.context = context
        self.pristine = context.copy()  # to see whether a step changed the context


class EagerStarter:
    """Starts coroutines on one event loop; see the module's doc."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._spare: _Spare | None = None  # parked, ready to run a first step
        self._parking: asyncio.Task[None] | None = None  # a spare not parked yet
        self._closed = False
        self.deferred = False  # whether the last `start` only scheduled an ordinary task

    def start(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run `coro` until it ends or waits. Returns None when it ended, else its task."""
        spare = self._spare
        loop = self._loop
        if spare is None or _current_tasks.get(loop) is not None:
            # No spare parked yet, or called from inside a task (where the current task
            # cannot be switched): an ordinary task.
            if spare is None:
                self._park_a_spare()
            self.deferred = True
            return loop.create_task(coro)
        self.deferred = False
        task = spare.task
        _enter_task(loop, task)
        try:
            waiting = spare.context.run(coro.send, None)
        except StopIteration:
            if spare.box.done() or spare.context != spare.pristine:
                self._retire(spare)  # the handler cancelled its task, or changed its context
            return None
        except asyncio.CancelledError:  # as a task's would: it ends the request silently
            self._check(spare)
            return None
        except Exception as exc:  # as a task's would: reported, never raised here
            self._check(spare)
            loop.call_exception_handler(
                {"message": "an inbound request's coroutine failed", "exception": exc}
            )
            return None
        finally:
            _leave_task(loop, task)
        # It waits: the spare goes on with it.
        self._spare = None
        if spare.box.done():  # the step cancelled its own task: it gets the cancellation
            spare.box = loop.create_future()
        spare.box.set_result((coro, waiting))
        self._park_a_spare()
        return task

    def close(self) -> list[asyncio.Task[None]]:
        """Retire the spares (the connection is closing) and return their tasks to be
        awaited. Coroutines already adopted go on (they are the connection's to cancel)."""
        self._closed = True
        tasks = []
        if self._spare is not None:
            tasks.append(self._spare.task)
            self._retire(self._spare)
        if self._parking is not None:
            tasks.append(self._parking)
            self._parking.cancel()
            self._parking = None
        return tasks

    def _check(self, spare: _Spare) -> None:
        """After a step that ended the coroutine: keep the spare only if it is untouched
        (not cancelled by the handler, its context unchanged)."""
        if spare.box.done() or spare.context != spare.pristine:
            self._retire(spare)

    def _retire(self, spare: _Spare) -> None:
        if self._spare is spare:
            self._spare = None
            self._park_a_spare()
        if not spare.box.done():
            spare.box.cancel()

    def _park_a_spare(self) -> None:
        if self._parking is not None or self._closed:
            return
        spare = _Spare(self._loop.create_future(), contextvars.copy_context())
        self._parking = self._loop.create_task(self._park(spare), context=spare.context)
        spare.task = self._parking

    async def _park(self, spare: _Spare) -> None:
        self._parking = None
        if self._closed or self._spare is not None:
            return  # not needed (any more)
        self._spare = spare
        try:
            coro, waiting = await spare.box
        except asyncio.CancelledError as exc:
            if spare.box.cancelled():  # retired before it adopted anything
                if self._spare is spare:
                    self._spare = None
                return
            coro, waiting = spare.box.result()  # adopted, and cancelled at once
            await _resume(coro, waiting, exc)
            return
        await _resume(coro, waiting)


@types.coroutine
def _resume(
    coro: Coroutine[Any, Any, None], waiting: Any, thrown: BaseException | None = None
) -> Generator[Any, None, None]:
    """Go on with a started coroutine as its task would: wait for what it yielded, then
    let it run on (it reads the future's outcome itself). What the task throws in here
    (a cancellation, a failed wait) goes into the coroutine instead."""
    while True:
        if thrown is None:
            try:
                yield waiting
            except BaseException as exc:  # noqa: B036 - delivered to the coroutine
                thrown = exc
                continue
            yield from coro
            return
        try:
            waiting = coro.throw(thrown)
        except StopIteration:
            return
        thrown = None
