"""The store writer: group commits off the event loop, a bounded queue, failures per batch.

Real SQLite files; a full database is SQLite's own SQLITE_FULL, reached by capping the
file's page count (`PRAGMA max_page_count`), which is how SQLite reports a full disk too.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from acpstack.agent import MemorySessionStore, SessionRecord, SqliteSessionStore
from acpstack.agent._session import Session
from acpstack.agent._store import SessionStore, StoreUnavailable
from acpstack.agent._writer import StoreThread, StoreWriter, writer_for


def new_store(tmp_path: Path, *sessions: str) -> SqliteSessionStore:
    store = SqliteSessionStore(tmp_path / "w.db")
    for sid in sessions:
        store.create(SessionRecord(sid, "/tmp"))
    return store


async def test_events_queued_together_commit_in_one_batch(tmp_path: Path) -> None:
    store = new_store(tmp_path, "a", "b", "c")
    writer = StoreWriter(store)
    tickets = [writer.append(sid, "update", b"%d" % i) for i in range(900) for sid in "abc"]
    assert writer.pending == 2700
    await tickets[-1].batch.wait()
    assert writer.batches == 1 and writer.pending == 0
    for sid in "abc":
        seqs = [t.result for t in tickets if t.batch.events[t.index][0] == sid]
        assert seqs == list(range(1, 901))
        stored = list(store.events(sid))
        assert [e.payload for e in stored] == [b"%d" % i for i in range(900)]
    writer.close()
    store.close()


async def test_commits_run_off_the_event_loop(tmp_path: Path) -> None:
    store = new_store(tmp_path, "a")
    loop_thread = threading.get_ident()
    seen: list[int] = []
    append_many = store.append_events

    def recording(events: list[tuple[str, str, bytes]]) -> list[int | Exception]:
        seen.append(threading.get_ident())
        return append_many(events)

    store.append_events = recording  # type: ignore[method-assign]
    writer = StoreWriter(store)
    ticket = writer.append("a", "update", b"x")
    await ticket.batch.wait()
    got = await writer.call(store.get, "a")
    assert got is not None and seen and loop_thread not in seen
    writer.close()
    store.close()


async def test_a_producer_waits_while_the_queue_is_full(tmp_path: Path) -> None:
    store = new_store(tmp_path, "a")
    writer = StoreWriter(store, max_pending=10)
    highest = 0
    last = None
    for i in range(200):
        await writer.room()
        last = writer.append("a", "update", b"%d" % i)
        highest = max(highest, writer.pending)
    assert last is not None
    await last.batch.wait()
    assert highest <= 10
    assert [e.seq for e in store.events("a")] == list(range(1, 201))
    writer.close()
    store.close()


async def test_an_unknown_session_fails_alone(tmp_path: Path) -> None:
    store = new_store(tmp_path, "a")
    writer = StoreWriter(store)
    first = writer.append("a", "update", b"1")
    lost = writer.append("gone", "update", b"2")
    second = writer.append("a", "update", b"3")
    await second.batch.wait()
    assert first.result == 1 and second.result == 2
    assert isinstance(lost.result, KeyError)
    writer.close()
    store.close()


async def test_a_full_database_fails_the_batch_and_storing_resumes(tmp_path: Path) -> None:
    store = new_store(tmp_path, "a")
    writer = StoreWriter(store)
    first = writer.append("a", "update", b"kept")
    await first.batch.wait()
    pages = await writer.call(
        lambda: store._connection().execute("PRAGMA page_count").fetchone()[0]
    )
    await writer.call(lambda: store._connection().execute(f"PRAGMA max_page_count = {pages}"))
    big = [writer.append("a", "update", b"x" * 4000) for _ in range(50)]
    await big[-1].batch.wait()
    assert all(isinstance(t.result, StoreUnavailable) for t in big)
    assert "full" in str(big[0].result)
    # Until the session knows, its next events are refused too: no gap in its history.
    refused = writer.append("a", "update", b"refused")
    await refused.batch.wait()
    assert isinstance(refused.result, StoreUnavailable)
    # Space again: the same writer and store take the next batch (the failed connection
    # was replaced, so the pragma no longer caps it).
    writer.forgive("a")
    after = writer.append("a", "update", b"after")
    await after.batch.wait()
    assert after.result == 2
    assert [e.payload for e in store.events("a")] == [b"kept", b"after"]
    writer.close()
    store.close()


async def test_a_store_that_never_blocks_is_written_at_once() -> None:
    store = MemorySessionStore()
    store.create(SessionRecord("a", "/tmp"))
    writer = writer_for(store)
    assert writer.inline
    ticket = writer.append("a", "update", b"1")
    assert ticket.done and ticket.result == 1
    assert writer.append_now("a", "update", b"2") == 2
    with pytest.raises(KeyError):
        writer.append_now("gone", "update", b"3")


async def test_one_writer_per_store_and_loop(tmp_path: Path) -> None:
    store: SessionStore = new_store(tmp_path)
    assert writer_for(store) is writer_for(store)
    (tmp_path / "x").mkdir()
    other = new_store(tmp_path / "x")
    assert writer_for(other) is not writer_for(store)
    writer_for(store).close()
    writer_for(other).close()
    await asyncio.sleep(0)


class GatedStore(MemorySessionStore):
    """A store that serves several threads and whose batch commit waits for `gate`."""

    blocking = True
    concurrent_calls = 2

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.committing = threading.Event()

    def append_events(self, events: list[tuple[str, str, bytes]]) -> list[int | Exception]:
        self.committing.set()
        self.gate.wait(30)
        return super().append_events(events)


async def test_a_call_about_another_session_does_not_wait_for_the_batch() -> None:
    """A session reattached after a failover is read while the writer is busy with the
    events of other sessions; a call about a session with events queued waits for them."""
    store = GatedStore()
    for sid in ("busy", "idle"):
        store.create(SessionRecord(sid, "/tmp"))
    writer = StoreWriter(store)
    ticket = writer.append("busy", "update", b"x")
    await asyncio.to_thread(store.committing.wait, 30)  # the batch is committing, held
    record = await asyncio.wait_for(writer.call_about("idle", store.get, "idle"), 30)
    assert record is not None and record.session_id == "idle"
    assert not ticket.done  # the batch is still held: the read did not wait for it
    waiting = asyncio.ensure_future(writer.call_about("busy", store.get, "busy"))
    plain = asyncio.ensure_future(writer.call(store.get, "idle"))
    await asyncio.sleep(0)
    assert not waiting.done() and not plain.done()
    store.gate.set()
    await ticket.batch.wait()
    assert (await waiting) is not None and (await plain) is not None
    assert [e.payload for e in store.events("busy")] == [b"x"]
    writer.close()


async def test_a_sessions_own_reads_and_writes_do_not_wait_for_other_sessions() -> None:
    """A session's history (a reattached session's catch-up) and its settings wait only
    for the batches holding its own events, not for a batch of another session's."""
    store = GatedStore()
    for sid in ("busy", "idle"):
        store.create(SessionRecord(sid, "/tmp"))
    store.append_event("idle", "update", b"before")
    writer = writer_for(store)  # the one the session uses
    ticket = writer.append("busy", "update", b"x")
    await asyncio.to_thread(store.committing.wait, 30)  # the batch is committing, held
    record = store.get("idle")
    assert record is not None
    session = Session.from_record(record, client=None, store=store)  # type: ignore[arg-type]

    async def history() -> list[bytes]:
        return [event.payload async for event in session.history()]

    assert await asyncio.wait_for(history(), 30) == [b"before"]
    session.title = "renamed"
    await asyncio.wait_for(session.save(), 30)
    assert store.get("idle").title == "renamed"  # type: ignore[union-attr]
    assert not ticket.done  # the other session's batch is still held
    store.gate.set()
    await ticket.batch.wait()
    writer.close()


async def test_the_store_thread_runs_calls_in_order_and_returns_their_failures() -> None:
    thread = StoreThread("acpstack-store-test")
    seen: list[int] = []
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def record(n: int) -> int:
        seen.append(n)
        ran_on.append(threading.get_ident())
        return n * 10

    def refuse() -> None:
        raise ValueError("no")

    futures = [thread.run(record, n) for n in range(50)]
    assert await asyncio.gather(*futures) == [n * 10 for n in range(50)]
    assert seen == list(range(50)) and loop_thread not in ran_on and len(set(ran_on)) == 1
    with pytest.raises(ValueError, match="no"):
        await thread.run(refuse)
    # A caller that gave up (cancelled) does not stop the calls after it.
    gone = thread.run(record, 99)
    gone.cancel()
    assert await thread.run(record, 100) == 1000
    thread.shutdown()


def test_the_store_thread_outlives_a_closed_loop() -> None:
    """An answer for a loop that has closed meanwhile is dropped; the thread goes on."""
    thread = StoreThread("acpstack-store-test")
    gate = threading.Event()

    async def leave_one_waiting() -> None:
        thread.run(gate.wait, 30)  # answered after the loop below has closed

    asyncio.run(leave_one_waiting())
    gate.set()

    async def next_call() -> int:
        return await thread.run(lambda: 7)

    assert asyncio.run(next_call()) == 7
    thread.shutdown()
