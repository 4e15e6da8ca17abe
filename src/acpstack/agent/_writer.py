"""`StoreWriter`: how a `SessionAgent` writes its session store without blocking the loop.

Appends from every session of the process are queued and committed in batches, one
transaction per batch (`SessionStore.append_events`), on a thread of the store's own:
while one batch commits, the next one fills. A session hands each event to `append` and
gets a `Ticket`; the event reaches the client only once its ticket says it is stored
(`Session` does that), so "what a client saw is in the store" holds per batch. The added
latency is at most one commit of the batch before (tens of microseconds for SQLite, a
round trip and a disk flush for PostgreSQL).

The queue is bounded (`max_pending` events): a session that produces faster than the
disk waits in `room()`. Every other store call (`call`) runs on the same thread, in order
with the batches, so reads and settings never block the loop either. A store that can
serve several threads at once says how many (`concurrent_calls`, PostgreSQL's pool): its
calls then run side by side on threads of their own, each after the batches queued
before it (so a call still sees every event appended before it), and a burst of them
(the resumes after a failover) does not wait in one line. A call about one session
(`call_about`) waits only for the batches holding events of that session: a session
reattached after a failover (its events written by another process) is read at once,
however busy the writer is with the others.

A store that never blocks (`blocking = False`, such as `MemorySessionStore`) is called
inline, with no thread and no batch: its tickets are done at once.

A batch that fails as a whole (disk full, database down) fails each of its tickets with
`StoreUnavailable`; the writer goes on with the next batch, so storing resumes by itself
when the store comes back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from acpstack.agent._store import SessionBusy, SessionStore, StoreUnavailable
from acpstack.agent._store._records import NewEvent

log = logging.getLogger("acpstack.agent.store")

T = TypeVar("T")

_AFTER_A_FAILURE = StoreUnavailable("an earlier event of this session could not be stored")

MAX_PENDING = 16_384
"""Events queued and not yet committed, per store, before producers wait."""


class Batch:
    """Events committed in one transaction; `results[i]` is the seq of event i or the
    exception that refused it, once `done`."""

    __slots__ = ("events", "sessions", "results", "done", "_waiters")

    def __init__(self) -> None:
        self.events: list[NewEvent] = []
        self.sessions: set[str] = set()  # whose events it holds
        self.results: list[int | Exception] = []
        self.done = False
        self._waiters: list[asyncio.Future[None]] = []

    async def wait(self) -> None:
        """Until the batch is committed (or failed)."""
        if self.done:
            return
        # A future per waiter: one waiter cancelled leaves the others waiting (cheaper
        # than `asyncio.shield` around a shared one).
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter

    def finish(self, results: list[int | Exception]) -> None:
        self.results = results
        self.done = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()


class Ticket:
    """One appended event: where its result will be."""

    __slots__ = ("batch", "index")

    def __init__(self, batch: Batch, index: int) -> None:
        self.batch = batch
        self.index = index

    @property
    def done(self) -> bool:
        return self.batch.done

    @property
    def result(self) -> int | Exception:
        """The event's seq, or the exception that refused it (only once `done`)."""
        return self.batch.results[self.index]


def _done_ticket(result: int | Exception) -> Ticket:
    batch = Batch()
    batch.finish([result])
    return Ticket(batch, 0)


class StoreThread:
    """One thread that runs store calls one after another; `run` returns an asyncio future
    of the call's result. A `ThreadPoolExecutor` with `run_in_executor` does the same with
    a `concurrent.futures.Future` chained to an asyncio one; this hand-off costs the loop
    about 40% less CPU (a lone prompt with SQLite crosses to the thread and back once).

    A daemon thread: a batch cut short when the process exits was never acknowledged
    (nothing is delivered before its commit), and SQLite and PostgreSQL roll it back."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run `fn(*args)` on the thread, after the calls before it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, fn, args))
        return future

    def shutdown(self) -> None:
        """End the thread once the calls queued before are done."""
        self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, future, fn, args = job
            outcome: tuple[Callable[[asyncio.Future[Any], Any], None], Any, Any]
            try:
                outcome = (_settle, future, fn(*args))
            except Exception as exc:  # the caller's to handle, on its loop
                outcome = (_refuse, future, exc)
            try:
                loop.call_soon_threadsafe(*outcome)
            except RuntimeError:  # the loop is closed: nobody waits for the answer
                pass


def _settle(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _refuse(future: asyncio.Future[Any], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)


class StoreWriter:
    """The group-committing writer of one store in one process (see the module's doc).
    Get it with `writer_for(store)`: every `SessionAgent` of the process shares it."""

    def __init__(self, store: SessionStore, *, max_pending: int = MAX_PENDING) -> None:
        self.store = store
        self.blocking: bool = getattr(store, "blocking", True)
        self.max_pending = max_pending
        self.pending = 0  # events handed to `append` and not committed yet
        self.batches = 0  # batches committed (or failed): for benchmarks and tests
        self._open: Batch | None = None  # filling
        self._committing: Batch | None = None
        self._task: asyncio.Task[None] | None = None
        self._failed: set[str] = set()  # sessions whose events failed (see `forgive`)
        self._room = asyncio.Event()
        self._room.set()
        self._append_many: Callable[[list[NewEvent]], list[int | Exception]] = getattr(
            store, "append_events", None
        ) or (lambda events: SessionStore.append_events(store, events))
        # One thread: batches and every other call run in order, never two at once...
        self._thread = StoreThread("acpstack-store") if self.blocking else None
        # ...unless the store serves several threads: then calls have threads of their own
        side_by_side = int(getattr(store, "concurrent_calls", 1))
        self._calls = (
            concurrent.futures.ThreadPoolExecutor(
                side_by_side, thread_name_prefix="acpstack-store-calls"
            )
            if self.blocking and side_by_side > 1
            else None
        )

    def forgive(self, session_id: str) -> None:
        """The session knows its events failed: its next ones are written again."""
        self._failed.discard(session_id)

    @property
    def full(self) -> bool:
        return self.pending >= self.max_pending

    async def room(self) -> None:
        """Wait while `max_pending` events are queued (backpressure)."""
        while self.pending >= self.max_pending:
            self._room.clear()
            await self._room.wait()

    @property
    def inline(self) -> bool:
        """Whether the store is called at once, on the loop (it never blocks)."""
        return self._thread is None

    def append_now(self, session_id: str, kind: str, payload: bytes) -> int:
        """Append one event at once (an `inline` writer): its seq; KeyError, SessionBusy,
        or `StoreUnavailable` for any other failure of the store."""
        try:
            return self.store.append_event(session_id, kind, payload)
        except (KeyError, SessionBusy, TypeError, ValueError):
            raise
        except Exception as exc:
            raise StoreUnavailable(exc) from exc

    def append(self, session_id: str, kind: str, payload: bytes) -> Ticket:
        """Queue one event for the next batch (call `room()` first to respect the bound)."""
        if self._thread is None:
            try:
                return _done_ticket(self.append_now(session_id, kind, payload))
            except (KeyError, SessionBusy, StoreUnavailable) as exc:
                return _done_ticket(exc)
        return Ticket(*self.queue(session_id, kind, payload))

    def queue(self, session_id: str, kind: str, payload: bytes) -> tuple[Batch, int]:
        """`append` for a writer with a thread, without making a `Ticket` (the hot path of
        a streaming turn): the batch the event is in and its index there."""
        batch = self._open
        if batch is None:
            batch = self._open = Batch()
        events = batch.events
        events.append((session_id, kind, payload))
        batch.sessions.add(session_id)
        self.pending += 1
        if self._task is None:
            # Owned by the writer; it ends by itself once no batch is waiting.
            self._task = asyncio.get_running_loop().create_task(self._commit_batches())
        return batch, len(events) - 1

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store call off the loop, in order with the batches (inline for a store
        that never blocks). A failure of the store itself raises `StoreUnavailable`."""
        if self._thread is None:
            return fn(*args, **kwargs)
        if self._calls is not None:
            queued = self._open or self._committing  # committed after every batch before it
            if queued is not None:
                await queued.wait()
        return await self._run_call(fn, *args, **kwargs)

    async def _run_call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        assert self._thread is not None
        call = (lambda: fn(*args, **kwargs)) if kwargs else functools.partial(fn, *args)
        if self._calls is None:
            future: asyncio.Future[T] = self._thread.run(call)
        else:
            future = asyncio.get_running_loop().run_in_executor(self._calls, call)
        try:
            return await future
        except (KeyError, ValueError, TypeError, SessionBusy, StoreUnavailable, RuntimeError):
            raise
        except Exception as exc:
            raise StoreUnavailable(exc) from exc

    async def call_about(
        self, session_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        """`call` for a call about one session only: with a store that serves several
        threads, it waits only for the queued batches holding events of `session_id`."""
        if self._calls is not None:
            for queued in (self._committing, self._open):
                if queued is not None and session_id in queued.sessions:
                    await queued.wait()
            return await self._run_call(fn, *args, **kwargs)
        return await self.call(fn, *args, **kwargs)

    async def _commit_batches(self) -> None:
        try:
            while self._open is not None:
                batch, self._open = self._open, None
                self._committing = batch
                assert self._thread is not None
                # (not loop.time(): uvloop's is the loop's cached clock, in whole
                # milliseconds, so a quick commit measured 0.0 s)
                started = time.perf_counter()
                # A session whose events failed writes none after them until it knows
                # (`forgive`): its history never has a gap in the middle of a turn.
                keep = [event[0] not in self._failed for event in batch.events]
                events = [event for event, kept in zip(batch.events, keep, strict=True) if kept]
                written: list[int | Exception] = []
                if events:
                    try:
                        written = await self._thread.run(self._append_many, events)
                    except Exception as exc:
                        log.warning(
                            "session store: a batch of %d events failed: %s", len(events), exc
                        )
                        written = [StoreUnavailable(exc)] * len(events)
                        self._failed.update(event[0] for event in events)
                answers = iter(written)
                results = [next(answers) if kept else _AFTER_A_FAILURE for kept in keep]
                self.batches += 1
                self.pending -= len(batch.events)
                self._committing = None
                batch.finish(results)
                for observe in _observers.get(self.store, ()):
                    observe(time.perf_counter() - started, self.pending)
                if self.pending < self.max_pending:
                    self._room.set()
        finally:
            self._task = None
            self._committing = None

    def close(self) -> None:
        """Stop the thread once what it runs now is done (the store stays open)."""
        if self._thread is not None:
            self._thread.shutdown()
        if self._calls is not None:
            self._calls.shutdown(wait=False)


_writers: weakref.WeakKeyDictionary[Any, dict[int, StoreWriter]] = weakref.WeakKeyDictionary()
BatchObserver = Callable[[float, int], None]
_observers: weakref.WeakKeyDictionary[Any, list[BatchObserver]] = weakref.WeakKeyDictionary()


def observe_store_batches(store: SessionStore, observer: BatchObserver) -> None:
    """Call `observer(seconds, waiting)` on the event loop after each batch committed to
    `store` (how long its commit took, how many events wait for the next one): for
    metrics. Must not block."""
    _observers.setdefault(store, []).append(observer)


def writer_for(store: SessionStore) -> StoreWriter:
    """The writer of `store` for the running event loop (made on first use)."""
    loop_id = id(asyncio.get_running_loop())
    try:
        per_loop = _writers.setdefault(store, {})
    except TypeError:  # a store that cannot be weakly referenced: one writer per call site
        return StoreWriter(store)
    writer = per_loop.get(loop_id)
    if writer is None:
        writer = per_loop[loop_id] = StoreWriter(store)
    return writer


__all__ = [
    "Batch",
    "BatchObserver",
    "StoreThread",
    "StoreWriter",
    "Ticket",
    "observe_store_batches",
    "writer_for",
]
