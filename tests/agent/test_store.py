"""Tests for acpstack.agent._store (session persistence)."""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpstack.agent._store import (
    SCHEMA_VERSION,
    MemorySessionStore,
    PostgresSessionStore,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
    StoredEvent,
    default_store_path,
    is_postgres_url,
    open_store,
)
from acpstack.agent._store import _sqlite as sqlite_backend
from acpstack.agent._store._records import EVENT_BATCH

HELPERS = Path(__file__).parent / "helpers"

pytestmark = pytest.mark.timeout(60)


def payload_for(seq: int) -> bytes:
    # Same as helpers/store_kill_appender.py.
    return seq.to_bytes(8, "big") + bytes(range(256))[: seq % 256] + b"\x00"


def is_canonical_ts(value: str) -> bool:
    # Fixed width: 2025-01-31T12:00:00.123456Z
    if len(value) != 27 or not value.endswith("Z"):
        return False
    datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    return True


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    """Every test that takes `store` runs against each backend (PostgreSQL: a throwaway
    server; skipped, saying why, where it cannot run)."""
    s: SessionStore
    if request.param == "sqlite":
        s = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    elif request.param == "postgres":
        s = PostgresSessionStore(request.getfixturevalue("postgres_url"))
    else:
        s = MemorySessionStore()
    yield s
    s.close()


def full_record(session_id: str = "s1", cwd: str = "/work/project") -> SessionRecord:
    return SessionRecord(
        session_id=session_id,
        cwd=cwd,
        additional_directories=["/work/lib", "/work/docs"],
        mcp_servers=[
            {"name": "fs", "command": "mcp-fs", "args": ["--root", "/"], "env": []},
            {"type": "http", "name": "web", "url": "https://example.test/mcp", "headers": []},
        ],
        mode_id="code",
        config_values={"model": "big", "temperature": 0.25, "nested": {"a": [1, 2, None]}},
        title="Fix the bug",
        meta={"client": "zed", "ünïcode": "✓"},
    )


# --------------------------------------------------------------------------- basics


def test_capabilities(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)
    assert store.supports_list and store.supports_delete and store.supports_fork


def test_round_trip(store: SessionStore) -> None:
    original = full_record()
    created = store.create(original)
    assert original.created_at == "" and original.updated_at == ""  # argument not mutated
    assert is_canonical_ts(created.created_at)
    assert created.updated_at == created.created_at
    assert store.get("s1") == created
    assert created.session_id == "s1"
    assert created.mcp_servers == original.mcp_servers
    assert created.config_values == original.config_values
    assert created.meta == original.meta
    assert store.get("nope") is None

    updated = store.update("s1", mode_id="architect", title=None, config_values={"x": 1})
    assert updated.mode_id == "architect" and updated.title is None
    assert updated.config_values == {"x": 1}
    assert updated.created_at == created.created_at
    assert updated.updated_at > created.updated_at
    assert store.get("s1") == updated

    payloads = [b"", b"\x00", bytes(range(256)), b'{"a":1}', os.urandom(1 << 20), b"\xff" * 3]
    before = updated.updated_at
    seqs = []
    for i, p in enumerate(payloads):
        seqs.append(store.append_event("s1", "prompt" if i % 2 else "update", p))
        rec = store.get("s1")
        assert rec is not None and rec.updated_at > before
        before = rec.updated_at
    assert seqs == list(range(1, len(payloads) + 1))

    evs = list(store.events("s1"))
    assert [e.seq for e in evs] == seqs
    assert [e.payload for e in evs] == payloads
    assert all(type(e.payload) is bytes for e in evs)
    assert [e.kind for e in evs] == ["update", "prompt"] * 3
    assert all(is_canonical_ts(e.created_at) for e in evs)
    assert [e.created_at for e in evs] == sorted(e.created_at for e in evs)
    assert evs[-1].created_at == before  # the append set updated_at to the event's time
    assert [e.seq for e in store.events("s1", after_seq=4)] == [5, 6]
    assert list(store.events("s1", after_seq=6)) == []
    assert list(store.events("unknown")) == []


def test_seq_is_per_session(store: SessionStore) -> None:
    store.create(SessionRecord("a", "/a"))
    store.create(SessionRecord("b", "/b"))
    got = [store.append_event(sid, "update", sid.encode()) for sid in "abab" * 5]
    assert got == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10]
    assert [e.payload for e in store.events("a")] == [b"a"] * 10


def test_create_validation(store: SessionStore) -> None:
    store.create(SessionRecord("dup", "/x"))
    with pytest.raises(ValueError, match="already exists"):
        store.create(SessionRecord("dup", "/y"))
    assert store.get("dup") == store.get("dup") and store.get("dup").cwd == "/x"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.create(SessionRecord("", "/x"))
    with pytest.raises(TypeError):
        store.create(SessionRecord("bad", "/x", additional_directories=[1]))  # type: ignore[list-item]
    with pytest.raises(TypeError):
        store.create(SessionRecord("bad", "/x", mcp_servers=[object()]))
    with pytest.raises(TypeError):
        store.create(SessionRecord("bad", "/x", config_values=[]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ISO 8601"):
        store.create(SessionRecord("bad", "/x", created_at="yesterday"))
    assert store.get("bad") is None


def test_given_timestamps_are_normalised(store: SessionStore) -> None:
    rec = store.create(
        SessionRecord(
            "t", "/x", created_at="2020-01-01T00:00:00+00:00", updated_at="2021-06-01T12:30:00Z"
        )
    )
    assert rec.created_at == "2020-01-01T00:00:00.000000Z"
    assert rec.updated_at == "2021-06-01T12:30:00.000000Z"
    rec = store.update("t", updated_at="2022-01-01T02:00:00+02:00")  # explicit value wins
    assert rec.updated_at == "2022-01-01T00:00:00.000000Z"
    only_created = store.create(SessionRecord("u", "/x", created_at="2020-01-01T00:00:00Z"))
    assert only_created.updated_at == only_created.created_at


def test_updated_at_never_goes_backwards(store: SessionStore) -> None:
    future = "2999-01-01T00:00:00.000000Z"
    store.create(SessionRecord("f", "/x", created_at=future))
    assert store.update("f", title="x").updated_at == "2999-01-01T00:00:00.000001Z"
    store.append_event("f", "update", b"1")
    assert store.get("f").updated_at == "2999-01-01T00:00:00.000002Z"  # type: ignore[union-attr]


def test_json_values_normalised_like_json(store: SessionStore) -> None:
    rec = store.create(
        SessionRecord(
            "j",
            "/x",
            additional_directories=("/a", "/b"),  # type: ignore[arg-type]
            mcp_servers=[("t", 1)],
            config_values={1: "one", "big": 2**70},  # type: ignore[dict-item]
        )
    )
    assert rec.additional_directories == ["/a", "/b"]
    assert rec.mcp_servers == [["t", 1]]
    assert rec.config_values == {"1": "one", "big": 2**70}
    assert store.get("j") == rec


def test_update_errors(store: SessionStore) -> None:
    with pytest.raises(KeyError):
        store.update("missing", title="x")
    store.create(SessionRecord("u", "/x"))
    for bad in ({"session_id": "v"}, {"created_at": "2020-01-01T00:00:00Z"}, {"colour": "red"}):
        with pytest.raises(TypeError):
            store.update("u", **bad)
    with pytest.raises(TypeError):
        store.update("u", cwd=None)
    with pytest.raises(TypeError):
        store.update("u", title=3)
    assert store.get("u") is not None and store.get("u").title is None  # type: ignore[union-attr]


def test_append_errors(store: SessionStore) -> None:
    with pytest.raises(KeyError):
        store.append_event("missing", "update", b"x")
    store.create(SessionRecord("a", "/x"))
    with pytest.raises(TypeError):
        store.append_event("a", "update", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store.append_event("a", "", b"x")
    with pytest.raises(ValueError):
        list(store.events("a", after_seq=-1))
    assert store.append_event("a", "update", bytearray(b"ba")) == 1  # type: ignore[arg-type]
    assert store.append_event("a", "update", memoryview(b"mv")) == 2  # type: ignore[arg-type]
    assert [e.payload for e in store.events("a")] == [b"ba", b"mv"]


def test_returned_objects_are_copies(store: SessionStore) -> None:
    rec = full_record()
    created = store.create(rec)
    rec.additional_directories.append("/leak")
    created.config_values["leak"] = True
    got = store.get("s1")
    assert got is not None
    got.meta["leak"] = True
    got.mcp_servers.clear()
    again = store.get("s1")
    assert again is not None
    assert "/leak" not in again.additional_directories
    assert "leak" not in again.config_values and "leak" not in again.meta
    assert len(again.mcp_servers) == 2
    store.append_event("s1", "update", b"p")
    ev = next(store.events("s1"))
    ev.payload = b"changed"
    assert next(store.events("s1")).payload == b"p"


def test_events_iterates_in_batches_and_allows_writes(store: SessionStore) -> None:
    store.create(SessionRecord("big", "/x"))
    n = 1000  # several internal batches
    for i in range(1, n + 1):
        store.append_event("big", "update", str(i).encode())
    seen = []
    for ev in store.events("big"):
        seen.append(ev.seq)
        if ev.seq % 100 == 0:  # writing while iterating must not deadlock
            store.update("big", title=str(ev.seq))
    assert seen == list(range(1, n + 1))
    assert [e.seq for e in store.events("big", after_seq=700)] == list(range(701, n + 1))
    assert [int(e.payload) for e in store.events("big", after_seq=995)] == [
        996,
        997,
        998,
        999,
        1000,
    ]


def test_threads_appending(store: SessionStore) -> None:
    store.create(SessionRecord("t", "/x"))
    n_threads, per_thread = 8, 150
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def work(t: int) -> None:
        try:
            barrier.wait()
            results[t] = [
                store.append_event("t", "update", f"{t}:{i}".encode()) for i in range(per_thread)
            ]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert not errors
    evs = list(store.events("t"))
    assert [e.seq for e in evs] == list(range(1, n_threads * per_thread + 1))
    by_seq = {e.seq: e.payload for e in evs}
    for t, seqs in results.items():
        assert seqs == sorted(seqs)
        assert [by_seq[s] for s in seqs] == [f"{t}:{i}".encode() for i in range(per_thread)]


def test_closed_store(store: SessionStore) -> None:
    store.create(SessionRecord("c", "/x"))
    store.close()
    store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        store.get("c")
    with pytest.raises(RuntimeError, match="closed"):
        store.append_event("c", "update", b"x")
    with pytest.raises(RuntimeError, match="closed"):
        store.events("c")


# --------------------------------------------------------------------------- list


def _ts(i: int) -> str:
    return f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}Z"


def _populate(store: SessionStore, n: int = 1000) -> list[SessionRecord]:
    cwds = ["/p/alpha", "/p/beta", "/p/gamma"]
    created = []
    for i in range(n):
        # Every 10 sessions share a timestamp, so the session_id tie-break matters.
        ts = _ts(i // 10 * 10)
        created.append(
            store.create(
                SessionRecord(f"sess-{i:04d}-{(i * 7919) % 1000:03d}", cwds[i % 3], updated_at=ts)
            )
        )
    return created


def _expected_order(records: list[SessionRecord]) -> list[str]:
    return [
        r.session_id
        for r in sorted(records, key=lambda r: (r.updated_at, r.session_id), reverse=True)
    ]


def _page_all(store: SessionStore, limit: int, cwd: str | None = None) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page, cursor = store.list_sessions(cwd=cwd, cursor=cursor, limit=limit)
        pages.append([r.session_id for r in page])
        if cursor is None:
            return pages
        assert len(page) == limit
        assert len(pages) < 1000, "pagination does not terminate"


def test_list_pages_1000_sessions(store: SessionStore) -> None:
    records = _populate(store)
    pages = _page_all(store, 37)
    assert len(pages) == -(-1000 // 37)
    assert all(len(p) == 37 for p in pages[:-1]) and len(pages[-1]) == 1000 % 37
    flat = [sid for p in pages for sid in p]
    assert len(flat) == len(set(flat)) == 1000
    assert flat == _expected_order(records)

    for cwd in ("/p/alpha", "/p/beta", "/p/gamma"):
        flat = [sid for p in _page_all(store, 37, cwd=cwd) for sid in p]
        assert flat == _expected_order([r for r in records if r.cwd == cwd])
    assert store.list_sessions(cwd="/p/none") == ([], None)

    # Full records come back, not just ids.
    first, _ = store.list_sessions(limit=1)
    assert first == [store.get(first[0].session_id)]


def test_list_end_and_limits(store: SessionStore) -> None:
    assert store.list_sessions() == ([], None)
    for i in range(4):
        store.create(SessionRecord(f"s{i}", "/x", updated_at=_ts(i)))
    page, cursor = store.list_sessions(limit=4)
    assert [r.session_id for r in page] == ["s3", "s2", "s1", "s0"] and cursor is None
    page, cursor = store.list_sessions(limit=2)
    assert [r.session_id for r in page] == ["s3", "s2"] and cursor is not None
    page, cursor = store.list_sessions(limit=2, cursor=cursor)
    assert [r.session_id for r in page] == [
        "s1",
        "s0",
    ] and cursor is None  # exact fit: no empty page
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="limit"):
            store.list_sessions(limit=bad)  # type: ignore[arg-type]


def test_list_stable_under_concurrent_inserts(store: SessionStore) -> None:
    records = _populate(store)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page, cursor = store.list_sessions(cursor=cursor, limit=37)
        seen += [r.session_id for r in page]
        pages += 1
        # Newer sessions keep arriving while the client pages (default timestamp: now).
        for j in range(5):
            store.create(SessionRecord(f"new-{pages}-{j}", "/p/alpha"))
        if cursor is None:
            break
    assert seen == _expected_order(records)
    assert len(store.list_sessions(limit=10_000)[0]) == 1000 + 5 * pages


def test_list_updated_session_is_not_repeated(store: SessionStore) -> None:
    records = _populate(store, 100)
    page, cursor = store.list_sessions(limit=10)
    store.update(page[0].session_id, title="touched")  # already seen: moves to the front
    store.append_event(page[5].session_id, "update", b"x")
    rest = [r.session_id for p in _page_all_from(store, cursor, 10) for r in p]
    seen = [r.session_id for r in page] + rest
    assert len(seen) == len(set(seen)) == 100
    assert seen == _expected_order(records)
    newest, _ = store.list_sessions(limit=2)
    assert [r.session_id for r in newest] == [page[5].session_id, page[0].session_id]


def _page_all_from(
    store: SessionStore, cursor: str | None, limit: int
) -> list[list[SessionRecord]]:
    out = []
    while cursor is not None:
        page, cursor = store.list_sessions(cursor=cursor, limit=limit)
        out.append(page)
    return out


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor!",
        "%%%%",
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),
        base64.urlsafe_b64encode(json.dumps([99, "2024-01-01", "x"]).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps([1, 5, "x"]).encode()).decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_list_invalid_cursor(store: SessionStore, cursor: str) -> None:
    store.create(SessionRecord("a", "/x"))
    with pytest.raises(ValueError, match="cursor"):
        store.list_sessions(cursor=cursor)


def test_cursor_is_opaque_and_portable_between_stores(tmp_path: Path) -> None:
    mem = MemorySessionStore()
    with SqliteSessionStore(tmp_path / "s.sqlite3") as sql:
        for s in (mem, sql):
            for i in range(5):
                s.create(SessionRecord(f"s{i}", "/x", updated_at=_ts(i)))
        _, c1 = mem.list_sessions(limit=2)
        _, c2 = sql.list_sessions(limit=2)
        assert c1 == c2 and c1 is not None
        assert all(ch.isalnum() or ch in "-_" for ch in c1)  # URL-safe, no padding
        assert [r.session_id for r in sql.list_sessions(cursor=c1)[0]] == ["s2", "s1", "s0"]


# --------------------------------------------------------------------------- delete / fork


def test_delete(store: SessionStore) -> None:
    store.create(SessionRecord("d", "/x"))
    store.create(SessionRecord("keep", "/x"))
    for i in range(3):
        store.append_event("d", "update", b"%d" % i)
    store.append_event("keep", "update", b"k")
    store.delete("d")
    assert store.get("d") is None
    assert list(store.events("d")) == []
    assert [r.session_id for r in store.list_sessions()[0]] == ["keep"]
    store.delete("d")  # idempotent
    store.delete("never-existed")
    with pytest.raises(KeyError):
        store.append_event("d", "update", b"x")
    # The id can be reused; history starts again at seq 1.
    store.create(SessionRecord("d", "/y"))
    assert store.append_event("d", "update", b"new") == 1
    assert [e.payload for e in store.events("d")] == [b"new"]
    assert [e.payload for e in store.events("keep")] == [b"k"]


def test_fork(store: SessionStore) -> None:
    src = store.create(full_record("src"))
    for i in range(300):
        store.append_event("src", "prompt" if i % 10 == 0 else "update", payload_for(i))
    src = store.get("src")  # type: ignore[assignment]
    src_events = list(store.events("src"))

    fork = store.fork("src", "child", cwd="/elsewhere")
    assert fork == store.get("child")
    assert fork.session_id == "child" and fork.cwd == "/elsewhere"
    assert fork.additional_directories == src.additional_directories
    assert (fork.mcp_servers, fork.mode_id, fork.config_values, fork.title, fork.meta) == (
        src.mcp_servers,
        src.mode_id,
        src.config_values,
        src.title,
        src.meta,
    )
    assert fork.created_at >= src.updated_at and fork.updated_at == fork.created_at
    assert list(store.events("child")) == src_events  # same seqs, kinds, payloads, times

    # Independent afterwards; source unchanged.
    assert store.append_event("child", "update", b"only child") == 301
    store.update("child", title="child title")
    assert store.get("src") == src
    assert list(store.events("src")) == src_events

    fork2 = store.fork("src", "child2", additional_directories=["/other"])
    assert fork2.cwd == src.cwd and fork2.additional_directories == ["/other"]
    assert len(list(store.events("child2"))) == 300

    with pytest.raises(KeyError):
        store.fork("missing", "x")
    with pytest.raises(ValueError, match="already exists"):
        store.fork("src", "child")
    with pytest.raises(ValueError, match="already exists"):
        store.fork("src", "src")
    with pytest.raises(ValueError):
        store.fork("src", "")
    assert store.get("x") is None
    assert list(store.events("child"))[-1].payload == b"only child"

    store.delete("src")  # deleting the source leaves forks intact
    assert len(list(store.events("child"))) == 301


def test_fork_of_empty_session(store: SessionStore) -> None:
    store.create(SessionRecord("e", "/x"))
    store.fork("e", "f")
    assert list(store.events("f")) == []
    assert store.append_event("f", "update", b"1") == 1


# --------------------------------------------------------------------------- SQLite specifics


def test_sqlite_pragmas_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with SqliteSessionStore(path):
        pass
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"sessions_by_updated", "sessions_by_cwd_updated"} <= indexes
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            ("a", 0),
        ).fetchall()
        assert "USING INDEX" in str(plan) and "TEMP B-TREE" not in str(plan)
    finally:
        conn.close()
    with SqliteSessionStore(path) as store:
        conn2 = store._connection()
        assert conn2.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn2.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn2.execute("PRAGMA busy_timeout").fetchone()[0] == 5000


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_sqlite_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "s.sqlite3"
    with SqliteSessionStore(path) as store:
        store.create(SessionRecord("a", "/x"))
        store.append_event("a", "update", b"x")
        for p in tmp_path.joinpath("deep", "er").iterdir():
            assert p.stat().st_mode & 0o077 == 0, p


def test_sqlite_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with SqliteSessionStore(str(path)) as first:
        rec = first.create(full_record("p"))
        for i in range(50):
            first.append_event("p", "update", payload_for(i))
        rec = first.update("p", title="persisted")
        first.fork("p", "p2", cwd="/fork")
        first.create(SessionRecord("gone", "/x"))
        first.append_event("gone", "update", b"x")
        first.delete("gone")
        evs = list(first.events("p"))
        listing = first.list_sessions()
    second = SqliteSessionStore(path)
    try:
        assert second.get("p") == rec
        assert list(second.events("p")) == evs
        assert list(second.events("p2")) == evs
        assert second.list_sessions() == listing
        assert second.get("gone") is None
        assert second.append_event("p", "update", b"after reopen") == 51
        orphan_count = (
            second._connection()
            .execute(
                "SELECT COUNT(*) FROM events WHERE session_id NOT IN (SELECT session_id FROM sessions)"
            )
            .fetchone()[0]
        )
        assert orphan_count == 0
    finally:
        second.close()


def test_sqlite_in_memory_path() -> None:
    with SqliteSessionStore(":memory:") as store:
        store.create(SessionRecord("m", "/x"))
        assert store.append_event("m", "update", b"1") == 1


def test_sqlite_two_objects_same_file_threads(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    stores = [SqliteSessionStore(path) for _ in range(4)]
    try:
        stores[0].create(SessionRecord("shared", "/x"))
        errors: list[BaseException] = []

        def work(k: int) -> None:
            try:
                for i in range(100):
                    stores[k].append_event("shared", "update", f"{k}:{i}".encode())
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=30)
        assert not errors
        evs = list(stores[3].events("shared"))
        assert [e.seq for e in evs] == list(range(1, 401))
        assert sorted(e.payload for e in evs) == sorted(
            f"{k}:{i}".encode() for k in range(4) for i in range(100)
        )
    finally:
        for s in stores:
            s.close()


def test_sqlite_refuses_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    SqliteSessionStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(RuntimeError, match="newer"):
        SqliteSessionStore(path)


def test_sqlite_migration_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.sqlite3"
    with SqliteSessionStore(path) as store:
        store.create(SessionRecord("old", "/x"))
    calls: list[int] = []

    def migrate_next(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("ALTER TABLE sessions ADD COLUMN extra TEXT")

    current = SCHEMA_VERSION
    monkeypatch.setattr(sqlite_backend, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(sqlite_backend.MIGRATIONS, current, migrate_next)
    with SqliteSessionStore(path) as store:
        assert store.get("old") is not None
    with SqliteSessionStore(path) as store:  # already migrated: hook not run again
        assert store._connection().execute("PRAGMA user_version").fetchone()[0] == current + 1
    assert calls == [1]

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("migration failed")

    monkeypatch.setattr(sqlite_backend, "SCHEMA_VERSION", current + 2)
    monkeypatch.setitem(sqlite_backend.MIGRATIONS, current + 1, broken)
    with pytest.raises(RuntimeError, match="migration failed"):
        SqliteSessionStore(path)
    conn = sqlite3.connect(path)
    try:  # rolled back as a whole
        assert conn.execute("PRAGMA user_version").fetchone()[0] == current + 1
        assert (
            conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone()
            is None
        )
    finally:
        conn.close()


def test_default_store_path_with_platformdirs() -> None:
    platformdirs = pytest.importorskip("platformdirs")
    expected = Path(platformdirs.user_data_dir("acpstack", appauthor=False)) / "sessions.sqlite3"
    assert default_store_path() == expected


def test_default_store_path_without_platformdirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # makes the import fail
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path() == tmp_path / "xdg" / "acpstack" / "sessions.sqlite3"
    with SqliteSessionStore() as store:  # parent directories are created
        assert Path(store.path) == tmp_path / "xdg" / "acpstack" / "sessions.sqlite3"
        store.create(SessionRecord("a", "/x"))
    assert (tmp_path / "xdg" / "acpstack" / "sessions.sqlite3").is_file()

    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert (
        default_store_path()
        == tmp_path / "home" / ".local" / "share" / "acpstack" / "sessions.sqlite3"
    )
    monkeypatch.delenv("XDG_DATA_HOME")
    assert (
        default_store_path()
        == tmp_path / "home" / ".local" / "share" / "acpstack" / "sessions.sqlite3"
    )


# --------------------------------------------------------------------------- other processes


def _helper(name: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPERS / name), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store shared by several processes lives: an SQLite file or a PostgreSQL URL."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "s.sqlite3")


def test_second_process_appends_concurrently(location: str) -> None:
    path = location
    n = 1500
    with open_store(path) as store:  # type: ignore[attr-defined]
        store.create(SessionRecord("shared", "/x"))
        with _helper("store_appender.py", str(path), "shared", str(n), "child") as proc:
            assert proc.stdin is not None and proc.stdout is not None
            assert proc.stdout.readline() == "ready\n", proc.stderr.read() if proc.stderr else ""
            proc.stdin.write("go\n")
            proc.stdin.flush()
            mine = [
                store.append_event("shared", "parent", f"parent-{i}".encode()) for i in range(n)
            ]
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
        theirs = json.loads(out)

        evs = list(store.events("shared"))
        assert [e.seq for e in evs] == list(range(1, 2 * n + 1))
        by_seq = {e.seq: e for e in evs}
        assert sorted(mine + theirs) == list(range(1, 2 * n + 1))
        for i, seq in enumerate(mine):
            assert (by_seq[seq].kind, by_seq[seq].payload) == ("parent", f"parent-{i}".encode())
        for i, seq in enumerate(theirs):
            assert (by_seq[seq].kind, by_seq[seq].payload) == ("child", f"child-{i}".encode())
        assert mine == sorted(mine) and theirs == sorted(theirs)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
# 6,000 commits, each one a disk flush on PostgreSQL: under a loaded machine's load this
# took over the module's 60 s once; the limit only guards against a hang.
@pytest.mark.timeout(300)
def test_kill_9_loses_no_acknowledged_event(location: str) -> None:
    path = location
    with open_store(path) as store:  # type: ignore[attr-defined]
        store.create(SessionRecord("k", "/x"))
    acked: list[int] = []
    next_seq = 1
    for _round in range(3):
        with _helper("store_kill_appender.py", str(path), "k", str(next_seq)) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            round_acks: list[int] = []
            while len(round_acks) < 2000:
                line = proc.stdout.readline()
                assert line.endswith("\n"), f"helper died: {proc.stderr.read()}"
                round_acks.append(int(line))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL
            # Acks already in the pipe when it died count too (complete lines only).
            rest = proc.stdout.read()
            round_acks += [int(x) for x in rest.split("\n")[:-1]]
        assert round_acks == list(range(next_seq, next_seq + len(round_acks)))
        acked += round_acks

        if not is_postgres_url(path):
            conn = sqlite3.connect(path)
            try:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            finally:
                conn.close()
        with open_store(path) as store:  # type: ignore[attr-defined]
            evs = list(store.events("k"))
        seqs = [e.seq for e in evs]
        assert seqs == list(range(1, len(seqs) + 1))  # gapless
        # Every acknowledged event survived. The helper may also have been killed between
        # a COMMIT and writing its ack: such an event is present but unacknowledged.
        assert seqs[-1] - round_acks[-1] in (0, 1)
        assert set(acked) <= set(seqs)
        assert all(e.payload == payload_for(e.seq) and e.kind == "update" for e in evs)
        next_seq = seqs[-1] + 1
    assert len(acked) >= 6000


# --------------------------------------------------------------------------- differential


_ids = st.sampled_from(["a", "b", "c", "d"])
_ops = st.one_of(
    st.tuples(st.just("create"), _ids, st.sampled_from(["/x", "/y"])),
    st.tuples(st.just("update"), _ids, st.sampled_from(["t1", "t2", None])),
    st.tuples(st.just("append"), _ids, st.binary(max_size=20)),
    st.tuples(st.just("delete"), _ids),
    st.tuples(st.just("fork"), _ids, _ids),
    st.tuples(st.just("events"), _ids, st.integers(0, 5)),
    st.tuples(st.just("list"), st.sampled_from([None, "/x", "/y"]), st.integers(1, 3)),
)


def _strip(value: Any) -> Any:
    """Drop timestamps (the two stores run at different instants)."""
    if isinstance(value, SessionRecord):
        return (
            value.session_id,
            value.cwd,
            value.title,
            value.mode_id,
            value.additional_directories,
        )
    if isinstance(value, StoredEvent):
        return (value.seq, value.kind, value.payload)
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _apply(store: SessionStore, op: tuple[Any, ...]) -> Any:
    try:
        match op:
            case ("create", sid, cwd):
                return _strip(store.create(SessionRecord(sid, cwd)))
            case ("update", sid, title):
                return _strip(store.update(sid, title=title))
            case ("append", sid, payload):
                return store.append_event(sid, "update", payload)
            case ("delete", sid):
                return store.delete(sid)
            case ("fork", src, new):
                return _strip(store.fork(src, new))
            case ("events", sid, after):
                return _strip(list(store.events(sid, after_seq=after)))
            case ("list", cwd, limit):
                ids: list[str] = []
                cursor = None
                while True:
                    page, cursor = store.list_sessions(cwd=cwd, cursor=cursor, limit=limit)
                    ids += [r.session_id for r in page]
                    if cursor is None:
                        return sorted(ids)
    except (KeyError, ValueError) as exc:
        return type(exc).__name__
    raise AssertionError(op)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ops, max_size=40))
def test_memory_and_sqlite_agree(ops: list[tuple[Any, ...]]) -> None:
    mem = MemorySessionStore()
    with SqliteSessionStore(":memory:") as sql:
        for op in ops:
            assert _apply(mem, op) == _apply(sql, op), op
        for sid in "abcd":
            assert _strip(mem.get(sid)) == _strip(sql.get(sid))
            assert _strip(list(mem.events(sid))) == _strip(list(sql.events(sid)))


def test_a_version_1_store_gains_the_archived_flag(tmp_path: Path) -> None:
    # A file written before session/archive existed: schema version 1, no `archived` column.
    path = tmp_path / "v1.sqlite3"
    conn = sqlite3.connect(path)
    sqlite_backend._migrate_0_to_1(conn)
    conn.execute(
        "INSERT INTO sessions VALUES ('old', '/w', '[]', '[]', NULL, '{}', 'kept', "
        "'2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z', '{}')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with SqliteSessionStore(path) as store:
        record = store.get("old")
        assert record is not None and record.title == "kept" and record.archived is False
        assert [r.session_id for r in store.list_sessions()[0]] == ["old"]
        store.update("old", archived=True)
    with SqliteSessionStore(path) as store:
        assert store._connection().execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.list_sessions() == ([], None)
        assert [r.session_id for r in store.list_sessions(archived="only")[0]] == ["old"]


def test_archived_sessions_leave_the_list_unless_asked_for(store: SessionStore) -> None:
    for sid in ("a", "b", "c"):
        store.create(SessionRecord(sid, "/w"))
    store.update("b", archived=True)
    ids = lambda archived: [r.session_id for r in store.list_sessions(archived=archived)[0]]  # noqa: E731
    assert sorted(ids("exclude")) == ["a", "c"]
    assert ids("only") == ["b"]
    assert sorted(ids("include")) == ["a", "b", "c"]
    assert sorted(r.session_id for r in store.list_sessions()[0]) == ["a", "c"]
    # Paging over only the archived ones, and a fork of an archived session is live.
    store.update("c", archived=True)
    page, cursor = store.list_sessions(limit=1, archived="only")
    rest, end = store.list_sessions(limit=1, archived="only", cursor=cursor)
    assert sorted([page[0].session_id, rest[0].session_id]) == ["b", "c"] and end is None
    assert store.fork("b", "f").archived is False
    with pytest.raises(ValueError, match="archived must be one of"):
        store.list_sessions(archived="everything")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="archived must be a bool"):
        store.update("a", archived="yes")


def test_a_version_2_store_keeps_its_events_and_appends_runs(tmp_path: Path) -> None:
    # A file written before a row could hold a run of events: one row per event, no `n`.
    path = tmp_path / "v2.sqlite3"
    conn = sqlite3.connect(path)
    sqlite_backend._migrate_0_to_1(conn)
    sqlite_backend._migrate_1_to_2(conn)
    conn.execute(
        "INSERT INTO sessions VALUES ('old', '/w', '[]', '[]', NULL, '{}', NULL, "
        "'2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z', '{}', 0)"
    )
    for seq in (1, 2, 3):
        conn.execute(
            "INSERT INTO events VALUES ('old', ?, 'update', ?, '2025-01-01T00:00:00.000000Z')",
            (seq, f"old-{seq}".encode()),
        )
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with SqliteSessionStore(path) as store:
        assert [(e.seq, e.payload) for e in store.events("old")] == [
            (1, b"old-1"),
            (2, b"old-2"),
            (3, b"old-3"),
        ]
        # New events go after them, a batch of one session's events as one row.
        batch = [("old", "update", f"new-{i}".encode()) for i in range(4, 9)]
        assert store.append_events([*batch, ("old", "prompt", b"p")]) == [4, 5, 6, 7, 8, 9]
        assert store.append_event("old", "update", b"one") == 10
        store.fork("old", "copy")
    with SqliteSessionStore(path) as store:
        conn2 = store._connection()
        assert conn2.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        rows = conn2.execute("SELECT seq, n FROM events WHERE session_id = 'old' ORDER BY seq")
        assert rows.fetchall() == [(1, 1), (2, 1), (3, 1), (9, 6), (10, 1)]
        for sid in ("old", "copy"):
            events = list(store.events(sid))
            assert [e.seq for e in events] == list(range(1, 11))
            assert [e.kind for e in events][7:] == ["update", "prompt", "update"]
            assert events[5].payload == b"new-6" and events[8].payload == b"p"
        # Reading from the middle of a run starts at the right event.
        assert [e.seq for e in store.events("old", after_seq=6)] == [7, 8, 9, 10]
        assert [e.payload for e in store.events("old", after_seq=8)] == [b"p", b"one"]


def test_reads_cross_many_runs_in_order(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "s.sqlite3") as store:
        store.create(SessionRecord("a", "/w"))
        store.create(SessionRecord("b", "/w"))
        expected: dict[str, list[bytes]] = {"a": [], "b": []}
        for round_ in range(EVENT_BATCH + 7):  # more rows (runs of 3) than one read takes
            batch = [
                (sid, "update", f"{sid}{round_}-{i}".encode()) for i in range(3) for sid in "ab"
            ]
            store.append_events(batch)
            for sid, _, payload in batch:
                expected[sid].append(payload)
        for sid in "ab":
            events = list(store.events(sid))
            assert [e.payload for e in events] == expected[sid]
            assert [e.seq for e in events] == list(range(1, len(expected[sid]) + 1))
            middle = len(expected[sid]) // 2 + 1
            assert [e.seq for e in store.events(sid, after_seq=middle)][0] == middle + 1
