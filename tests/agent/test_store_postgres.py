"""What only the PostgreSQL store does: its schema and migrations, and one writer per
session across processes (leases). The shared behaviour is tests/agent/test_store.py,
which runs against every backend. A throwaway server comes from the `postgres_url`
fixture (tests/conftest.py); without PostgreSQL these tests skip and say why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpstack.agent._store import (
    MemorySessionStore,
    PostgresSessionStore,
    SessionBusy,
    SessionLeases,
    SessionRecord,
    SqliteSessionStore,
    open_store,
)
from acpstack.agent._store import _pg_schema as schema
from tools.cluster._postgres import free_port, wait_for_release

HELPERS = Path(__file__).parent / "helpers"
sys.path.insert(0, str(Path(__file__).parent))
from test_store import _apply, _ops, _strip, full_record  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def sql(url: str, *statements: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run statements on a connection of their own; the last one's rows."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows: list[tuple[Any, ...]] = []
        for statement in statements:
            cursor = conn.execute(statement, params if "%s" in statement else None)
            rows = cursor.fetchall() if cursor.description else []
        return rows


@pytest.fixture
def stores(postgres_url: str) -> Iterator[tuple[PostgresSessionStore, PostgresSessionStore]]:
    """Two nodes on one database."""
    a, b = PostgresSessionStore(postgres_url), PostgresSessionStore(postgres_url)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


class Helper:
    """A helper script in another process, spoken to one line at a time."""

    def __init__(self, name: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HELPERS / name), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def line(self) -> str:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline()
        assert line.endswith("\n"), f"the helper died: {self.proc.stderr.read()}"
        return line.strip()

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.line()

    def end(self) -> None:
        """Close its input (it exits), or kill it when it does not within 10 s."""
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate(timeout=30)


# --------------------------------------------------------------------------- schema


def test_schema_version_indexes_and_collation(postgres_url: str) -> None:
    with PostgresSessionStore(postgres_url):
        pass
    assert sql(postgres_url, "SELECT version FROM acpstack_schema") == [(schema.SCHEMA_VERSION,)]
    indexes = {r[0] for r in sql(postgres_url, "SELECT indexname FROM pg_indexes")}
    assert {
        "acpstack_sessions_by_updated",
        "acpstack_sessions_by_cwd_updated",
        "acpstack_events_pkey",
    } <= indexes
    collations = sql(
        postgres_url,
        "SELECT c.collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation "
        "WHERE a.attrelid = 'acpstack_sessions'::regclass AND a.attname = 'session_id'",
    )
    assert collations == [("C",)]  # the order of session ids is the same as Python's
    plan = sql(
        postgres_url,
        "SET enable_seqscan = off",
        "EXPLAIN SELECT * FROM acpstack_events WHERE session_id = 'a' AND seq > 0 ORDER BY seq",
    )
    text = str(plan)
    assert "acpstack_events_pkey" in text and "Sort" not in text


def test_persists_across_reopen(postgres_url: str) -> None:
    with PostgresSessionStore(postgres_url) as first:
        rec = first.create(full_record("p"))
        for i in range(50):
            first.append_event("p", "update", b"%d" % i)
        rec = first.update("p", title="persisted")
        first.fork("p", "p2", cwd="/fork")
        first.create(SessionRecord("gone", "/x"))
        first.append_event("gone", "update", b"x")
        first.delete("gone")
        evs = list(first.events("p"))
        listing = first.list_sessions()
    with PostgresSessionStore(postgres_url) as second:
        assert second.get("p") == rec
        assert list(second.events("p")) == evs
        assert list(second.events("p2")) == evs
        assert second.list_sessions() == listing
        assert second.get("gone") is None
        assert second.append_event("p", "update", b"after reopen") == 51
        assert second.append_event("p2", "update", b"fork goes on") == 51
    orphans = sql(
        postgres_url,
        "SELECT COUNT(*) FROM acpstack_events "
        "WHERE session_id NOT IN (SELECT session_id FROM acpstack_sessions)",
    )
    assert orphans == [(0,)]


def test_refuses_newer_schema(postgres_url: str) -> None:
    PostgresSessionStore(postgres_url).close()
    sql(
        postgres_url,
        "UPDATE acpstack_schema SET version = %s",
        params=(schema.SCHEMA_VERSION + 1,),
    )
    with pytest.raises(RuntimeError, match="newer"):
        PostgresSessionStore(postgres_url)


def test_migration_hook_runs_once_and_all_or_nothing(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresSessionStore(postgres_url) as store:
        store.create(SessionRecord("old", "/x"))
    calls: list[int] = []

    def migrate_next(conn: Any) -> None:
        calls.append(1)
        conn.execute("ALTER TABLE acpstack_sessions ADD COLUMN extra text")

    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(schema.MIGRATIONS, current, migrate_next)
    with PostgresSessionStore(postgres_url) as store:
        assert store.get("old") is not None
    with PostgresSessionStore(postgres_url):  # already migrated: not run again
        pass
    assert calls == [1]
    assert sql(postgres_url, "SELECT version FROM acpstack_schema") == [(current + 1,)]

    def broken(conn: Any) -> None:
        conn.execute("CREATE TABLE half_done (x int)")
        raise RuntimeError("migration failed")

    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 2)
    monkeypatch.setitem(schema.MIGRATIONS, current + 1, broken)
    with pytest.raises(RuntimeError, match="migration failed"):
        PostgresSessionStore(postgres_url)
    rolled_back = [(current + 1,)]
    assert sql(postgres_url, "SELECT version FROM acpstack_schema") == rolled_back
    assert sql(postgres_url, "SELECT to_regclass('half_done')") == [(None,)]


def test_a_version_1_database_keeps_its_events_and_appends_runs(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A database made before a row could hold a run of events: one row per event, no `n`.
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 1)
    with PostgresSessionStore(postgres_url) as store:
        store.create(SessionRecord("old", "/w"))
        for seq in (1, 2, 3):
            assert store.append_event("old", "update", f"old-{seq}".encode()) == seq
    assert sql(postgres_url, "SELECT count(*) FROM acpstack_events") == [(3,)]
    monkeypatch.undo()
    with PostgresSessionStore(postgres_url) as store:
        assert [(e.seq, e.payload) for e in store.events("old")] == [
            (1, b"old-1"),
            (2, b"old-2"),
            (3, b"old-3"),
        ]
        batch = [("old", "update", f"new-{i}".encode()) for i in range(4, 9)]
        results = store.append_events([*batch, ("old", "prompt", b"p"), ("nobody", "update", b"x")])
        assert results[:6] == [4, 5, 6, 7, 8, 9] and isinstance(results[6], KeyError)
        assert store.append_event("old", "update", b"one") == 10
        store.fork("old", "copy")
        for sid in ("old", "copy"):
            events = list(store.events(sid))
            assert [e.seq for e in events] == list(range(1, 11))
            assert [e.kind for e in events][7:] == ["update", "prompt", "update"]
            assert events[5].payload == b"new-6" and events[8].payload == b"p"
        assert [e.payload for e in store.events("old", after_seq=8)] == [b"p", b"one"]
    assert sql(postgres_url, "SELECT version FROM acpstack_schema") == [(schema.SCHEMA_VERSION,)]
    runs = "SELECT seq, n FROM acpstack_events WHERE session_id = 'old' ORDER BY seq"
    assert sql(postgres_url, runs) == [(1, 1), (2, 1), (3, 1), (9, 6), (10, 1)]


def test_a_batch_is_stored_whole_or_not_at_all(postgres_url: str) -> None:
    """`append_events` is one statement: when the insert of one session's events fails,
    no session of the batch takes its seqs, and the store goes on."""
    import psycopg

    with PostgresSessionStore(postgres_url) as store:
        for sid in ("a", "b"):
            store.create(SessionRecord(sid, "/w"))
        assert store.append_event("a", "update", b"a1") == 1
        # a row already at the seq b's next event takes: the batch's insert conflicts
        sql(
            postgres_url,
            "INSERT INTO acpstack_events (session_id, seq, kind, payload, created_at, n) "
            "VALUES ('b', 1, 'update', 'x', now(), 1)",
        )
        with pytest.raises(psycopg.errors.UniqueViolation):
            store.append_events([("a", "update", b"a2"), ("b", "update", b"b1")])
        seqs = "SELECT session_id, last_seq FROM acpstack_sessions ORDER BY session_id"
        assert sql(postgres_url, seqs) == [("a", 1), ("b", 0)]
        assert [e.payload for e in store.events("a")] == [b"a1"]
        assert store.append_events([("a", "update", b"a2"), ("a", "prompt", b"p")]) == [2, 3]
        assert [e.payload for e in store.events("a")] == [b"a1", b"a2", b"p"]


def test_processes_starting_at_once_migrate_once(postgres_url: str) -> None:
    helpers = [Helper("store_open.py", postgres_url) for _ in range(4)]
    try:
        assert [h.line() for h in helpers] == ["ready"] * 4
        for h in helpers:  # as close to the same instant as we can make it
            assert h.proc.stdin is not None
            h.proc.stdin.write("go\n")
            h.proc.stdin.flush()
        outcomes = sorted(h.line() for h in helpers)
    finally:
        for h in helpers:
            h.end()
    assert outcomes == ["current", "current", "current", "migrated"]
    assert [h.proc.returncode for h in helpers] == [0] * 4


# --------------------------------------------------------------------------- leases


def test_a_session_is_live_on_one_node_at_a_time(
    stores: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = stores
    assert isinstance(a, SessionLeases)
    a.create(SessionRecord("x", "/x"))
    a.acquire("x")
    assert a.holder("x") == a.name
    with pytest.raises(SessionBusy, match="live on another node"):
        b.acquire("x")
    with pytest.raises(SessionBusy):
        b.append_event("x", "update", b"b")
    with pytest.raises(SessionBusy):
        b.update("x", title="b")
    with pytest.raises(SessionBusy):
        b.delete("x")
    assert a.append_event("x", "update", b"a") == 1
    assert b.get("x") is not None and [e.payload for e in b.events("x")] == [b"a"]  # reads

    a.release("x")
    assert a.holder("x") is None
    b.acquire("x")
    assert b.append_event("x", "update", b"b") == 2
    # While B has it, a late write of A's is refused, never interleaved.
    with pytest.raises(SessionBusy):
        a.append_event("x", "update", b"late a")
    with pytest.raises(SessionBusy):
        a.acquire("x")
    b.close()  # a node that closes its store lets go of its sessions
    assert a.holder("x") is None
    a.acquire("x")
    assert a.append_event("x", "update", b"a again") == 3
    assert [e.payload for e in a.events("x")] == [b"a", b"b", b"a again"]


def test_acquires_are_counted(stores: tuple[PostgresSessionStore, PostgresSessionStore]) -> None:
    a, b = stores
    a.create(SessionRecord("x", "/x"))
    a.acquire("x")
    a.acquire("x")  # e.g. two connections of one node with the session open
    a.release("x")
    with pytest.raises(SessionBusy):
        b.acquire("x")
    a.release("x")
    a.release("x")  # one too many: nothing happens
    b.acquire("x")


def test_acquire_owned_reads_and_holds_in_one_step_only_what_it_may(
    stores: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = stores
    a.create(SessionRecord("x", "/x", title="mine", meta={"owner": "ann"}))
    assert a.acquire_owned("missing", "owner", None) is None
    assert a.acquire_owned("x", "owner", "bob") is None  # someone else's: nothing held
    b.acquire("x")
    b.release("x")
    a.append_event("x", "update", b"1")
    taken = a.acquire_owned("x", "owner", "ann")
    assert taken is not None
    record, last_seq = taken
    assert (record.session_id, record.title, last_seq) == ("x", "mine", 1)
    assert a.holder("x") == a.name
    assert b.acquire_owned("x", "owner", "ann") is None  # live on A: B gets nothing
    with pytest.raises(SessionBusy):
        b.acquire("x")
    assert a.acquire_owned("x", "owner", None) is not None  # None: any owner; counted
    a.release("x")
    assert a.holder("x") == a.name
    a.release("x")
    assert a.holder("x") is None
    assert b.acquire_owned("x", "owner", None) is not None


def test_unknown_and_unheld_sessions(
    stores: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = stores
    with pytest.raises(KeyError):
        a.acquire("missing")
    a.release("missing")  # nothing to release: no error
    a.create(SessionRecord("free", "/x"))
    # Nobody holds it: any node may write (tools that use the store directly).
    assert a.append_event("free", "update", b"1") == 1
    assert b.append_event("free", "update", b"2") == 2
    b.delete("free")
    assert a.get("free") is None


def test_racing_nodes_never_both_win(
    stores: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = stores
    winners: list[str] = []
    for round_ in range(20):
        sid = f"race-{round_}"
        a.create(SessionRecord(sid, "/x"))
        barrier = threading.Barrier(6)

        def grab(
            store: PostgresSessionStore,
            name: str,
            sid: str = sid,
            barrier: threading.Barrier = barrier,
        ) -> None:
            barrier.wait()
            try:
                store.acquire(sid)
                winners.append(f"{sid}:{name}")
            except SessionBusy:
                pass

        threads = [threading.Thread(target=grab, args=(s, n)) for s, n in [(a, "a"), (b, "b")] * 3]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        names = {w.split(":")[1] for w in winners if w.startswith(f"{sid}:")}
        assert len(names) == 1, f"round {round_}: both nodes acquired {sid}"


def test_takeover_when_the_holding_process_is_killed(postgres_url: str) -> None:
    with PostgresSessionStore(postgres_url) as store:
        store.create(SessionRecord("x", "/x"))
        holder = Helper("store_holder.py", postgres_url)
        try:
            assert holder.line() == "ready"
            assert holder.ask("acquire x") == "ok"
            assert holder.ask("append x") == "1"
            with pytest.raises(SessionBusy):
                store.acquire("x")
            with pytest.raises(SessionBusy):
                store.append_event("x", "update", b"not while it is held")
            key = sql(postgres_url, "SELECT owner FROM acpstack_sessions")[0][0]
            os.kill(holder.proc.pid, signal.SIGKILL)
            assert holder.proc.wait(timeout=30) == -signal.SIGKILL
            # The server ends the dead process's connections, and its presence lock with
            # them: wait for that lock (no polling), then take over at once.
            wait_for_release(postgres_url, key)
            store.acquire("x")
            assert store.append_event("x", "update", b"after the takeover") == 2
            assert store.holder("x") == store.name
        finally:
            holder.end()


def test_a_node_cut_off_from_the_database_is_fenced_out(postgres_url: str) -> None:
    """The holder lives on, but its presence connection is ended by the server: another
    node may take over, and the first one's writes are refused from then on."""
    with PostgresSessionStore(postgres_url) as store:
        store.create(SessionRecord("x", "/x"))
        holder = Helper("store_holder.py", postgres_url)
        try:
            assert holder.line() == "ready"
            assert holder.ask("acquire x") == "ok"
            key = sql(postgres_url, "SELECT owner FROM acpstack_sessions")[0][0]
            ended = sql(
                postgres_url,
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND classid = %s AND objid = %s AND granted",
                params=((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
            )
            assert ended == [(True,)]
            wait_for_release(postgres_url, key)
            store.acquire("x")
            assert holder.ask("append x") == "busy"
            assert holder.ask("acquire x") == "busy"  # it is back, but the session moved on
            assert store.append_event("x", "update", b"mine") == 1
            store.release("x")  # nobody holds it now, but the first node still thinks it
            assert holder.ask("append x") == "busy"  # does: its writes stay refused
            assert store.append_event("x", "update", b"anyone may") == 2
        finally:
            holder.end()


# --------------------------------------------------------------------------- selection


def test_open_store_picks_the_backend(postgres_url: str, tmp_path: Path) -> None:
    with open_store(postgres_url) as pg:  # type: ignore[attr-defined]
        assert isinstance(pg, PostgresSessionStore)
    short = postgres_url.replace("postgresql://", "postgres://", 1)
    with open_store(short) as pg:  # type: ignore[attr-defined]
        assert isinstance(pg, PostgresSessionStore)
    with open_store(str(tmp_path / "s.sqlite3")) as lite:  # type: ignore[attr-defined]
        assert isinstance(lite, SqliteSessionStore)


def test_unreachable_server_is_a_clear_error_without_the_password() -> None:
    import psycopg

    url = f"postgresql://user:sekrit-pw@127.0.0.1:{free_port()}/db?connect_timeout=5"
    with pytest.raises(psycopg.OperationalError) as caught:
        PostgresSessionStore(url, connect_timeout=5)
    assert "sekrit-pw" not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


def test_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes the import fail
    with pytest.raises(ImportError, match=r'pip install "\.\[postgres\]"'):
        PostgresSessionStore("postgresql://localhost/db")


# --------------------------------------------------------------------------- differential


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(_ops, max_size=40))
def test_memory_and_postgres_agree(postgres_shared: PostgresSessionStore, ops: list[Any]) -> None:
    sql_store = postgres_shared
    with sql_store._conn() as conn:
        conn.execute("TRUNCATE acpstack_sessions CASCADE")
    mem = MemorySessionStore()
    for op in ops:
        assert _apply(mem, op) == _apply(sql_store, op), op
    for sid in "abcd":
        assert _strip(mem.get(sid)) == _strip(sql_store.get(sid))
        assert _strip(list(mem.events(sid))) == _strip(list(sql_store.events(sid)))


@pytest.fixture
def postgres_shared(postgres_url: str) -> Iterator[PostgresSessionStore]:
    """One store for every example of a hypothesis test (emptied by the test)."""
    with PostgresSessionStore(postgres_url) as store:
        yield store
