"""`SqliteSessionStore`: every session in one SQLite file (WAL), shared by threads and processes."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Unpack

from acpstack.agent._store._paging import (
    RUN_KIND,
    cut_page,
    events_in_batches,
    list_query,
    pack_run,
    unpack_runs,
)
from acpstack.agent._store._records import (
    EVENT_BATCH,
    ArchiveFilter,
    ClosingStore,
    NewEvent,
    SessionChanges,
    SessionRecord,
    SessionStore,
    StoredEvent,
    default_store_path,
)
from acpstack.agent._store._rows import (
    ROW_COLUMNS,
    StoredRow,
    apply_changes,
    bump,
    check_after_seq,
    check_event_args,
    check_id,
    check_list_args,
    fork_record,
    from_row,
    prepare_new,
    to_row,
)

logger = logging.getLogger("acpstack.agent.store")

_BUSY_TIMEOUT_S = 5.0


SCHEMA_VERSION = 3


def _migrate_0_to_1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE sessions (
            session_id             TEXT PRIMARY KEY NOT NULL,
            cwd                    TEXT NOT NULL,
            additional_directories TEXT NOT NULL,  -- JSON array
            mcp_servers            TEXT NOT NULL,  -- JSON array
            mode_id                TEXT,
            config_values          TEXT NOT NULL,  -- JSON object
            title                  TEXT,
            created_at             TEXT NOT NULL,  -- ISO 8601 UTC, fixed width
            updated_at             TEXT NOT NULL,
            meta                   TEXT NOT NULL   -- JSON object
        )
        """
    )
    # session/list: newest first, optionally filtered by cwd.
    conn.execute("CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, session_id DESC)")
    conn.execute(
        "CREATE INDEX sessions_by_cwd_updated ON sessions (cwd, updated_at DESC, session_id DESC)"
    )
    # A rowid table (not WITHOUT ROWID): payloads can be large. The primary key is the
    # (session_id, seq) index used for replay and for computing the next seq.
    conn.execute(
        """
        CREATE TABLE events (
            session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
            seq        INTEGER NOT NULL,
            kind       TEXT NOT NULL,
            payload    BLOB NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """
    )


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    # session/archive: an archived session stays (history and all) but leaves session/list.
    conn.execute("ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0")


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    # A row may hold a run of a session's events (see `_paging.RUN_KIND`): `n` is how many;
    # every row of an older file is a run of one.
    conn.execute("ALTER TABLE events ADD COLUMN n INTEGER NOT NULL DEFAULT 1")


# MIGRATIONS[v] upgrades a database from user_version v to v + 1. Each runs inside the
# same BEGIN IMMEDIATE transaction that then sets the new user_version, so an upgrade is
# all-or-nothing and two processes opening an old file at once migrate it only once.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    0: _migrate_0_to_1,
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
}


class SqliteSessionStore(ClosingStore, SessionStore):
    """A `SessionStore` in one SQLite file.

    Safe to use from several threads (one connection, guarded by a lock) and from several
    processes at once (WAL mode, ``BEGIN IMMEDIATE`` write transactions, busy timeout).
    Pass ``":memory:"`` for a private in-memory database.
    """

    supports_list = True
    supports_delete = True
    supports_fork = True

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if path is None:
            path = default_store_path()
        self.path: str = os.fspath(path)
        if self.path != ":memory:":
            _prepare_file(Path(self.path))
        self._closed = False
        conn = self._open()
        try:
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        logger.debug("opened session store %s", self.path)

    # -- setup --------------------------------------------------------------------

    @staticmethod
    def _configure(conn: sqlite3.Connection) -> None:
        # Wait (rather than fail with "database is locked") while another connection or
        # process holds the write lock.
        conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        mode = _retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        if str(mode).lower() not in ("wal", "memory"):
            logger.warning(
                "session store: WAL journal mode unavailable (got %r); concurrent "
                "readers will block writers",
                mode,
            )
        # In WAL mode, synchronous=NORMAL makes a COMMIT append to the WAL file without
        # fsync (the WAL is fsynced at checkpoints). A committed transaction is in the OS
        # page cache once COMMIT returns, so it survives the *process* being killed
        # (kill -9, crash, OOM): only an OS crash or power loss can drop the last few
        # commits, and even then the database stays consistent (never corrupt). FULL would
        # fsync every append, costing a disk flush per session/update.
        conn.execute("PRAGMA synchronous = NORMAL")
        # Enforce events -> sessions; delete() also removes events explicitly, so
        # connections that did not enable this still leave no orphans.
        conn.execute("PRAGMA foreign_keys = ON")

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        _retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # re-read, locked
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"session store schema version {version} is newer than this acpstack "
                    f"understands ({SCHEMA_VERSION}); upgrade acpstack"
                )
            while version < SCHEMA_VERSION:
                logger.info("migrating session store schema %d -> %d", version, version + 1)
                MIGRATIONS[version](conn)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- plumbing -----------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=_BUSY_TIMEOUT_S,
            isolation_level=None,  # autocommit; we issue BEGIN IMMEDIATE/COMMIT ourselves
            check_same_thread=False,  # the lock serialises all use of the connection
        )
        try:
            self._configure(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if self._closed:
                raise RuntimeError("session store is closed")
            self._conn = self._open()  # after a failed write left the old one unusable
        return self._conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE takes the write lock up front (waiting up
        to the busy timeout), so reads inside it are current and nothing can interleave."""
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                self._roll_back(conn)
                raise

    def _roll_back(self, conn: sqlite3.Connection) -> None:
        """End a failed transaction. When SQLite cannot (a full disk can fail the ROLLBACK
        too), open the file again: a connection left inside a transaction would refuse
        every later write, long after the disk has room again."""
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if not conn.in_transaction:
                return
        except sqlite3.Error:
            pass
        logger.warning("session store %s: reopening the file after a failed write", self.path)
        with contextlib.suppress(sqlite3.Error):
            conn.close()
        self._conn = None  # opened again by the next call

    def _read_one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._connection().execute(sql, params).fetchone()
            return row

    def _read_record(self, session_id: str) -> SessionRecord | None:
        row = self._read_one(
            f"SELECT {ROW_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        )
        return None if row is None else from_row(StoredRow._make(row))

    def _read_all(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            rows: list[tuple[Any, ...]] = self._connection().execute(sql, params).fetchall()
            return rows

    @staticmethod
    def _select_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
        row = conn.execute(
            f"SELECT {ROW_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return None if row is None else from_row(StoredRow._make(row))

    @staticmethod
    def _insert_record(conn: sqlite3.Connection, record: SessionRecord) -> None:
        try:
            conn.execute(
                f"INSERT INTO sessions ({ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                to_row(record),
            )
        except sqlite3.IntegrityError:
            raise ValueError(f"session {record.session_id!r} already exists") from None

    # -- SessionStore ---------------------------------------------------------------

    def create(self, record: SessionRecord) -> SessionRecord:
        """Store a new session; the stored copy, timestamps filled in (ValueError if
        the id exists)."""
        new = prepare_new(record)
        with self._write() as conn:
            self._insert_record(conn, new)
        return from_row(to_row(new))  # exactly what a later get() returns

    def get(self, session_id: str) -> SessionRecord | None:
        """A fresh copy of the session's record, or None if there is no such session."""
        return self._read_record(session_id)

    def update(self, session_id: str, **changes: Unpack[SessionChanges]) -> SessionRecord:
        """Change the record's fields and bump `updated_at`; the new record (KeyError
        for an unknown session, TypeError for a field that cannot change)."""
        with self._write() as conn:
            current = self._select_record(conn, session_id)
            if current is None:
                raise KeyError(session_id)
            new = apply_changes(current, changes)
            row = to_row(new)
            conn.execute(
                "UPDATE sessions SET cwd = ?, additional_directories = ?, mcp_servers = ?, "
                "mode_id = ?, config_values = ?, title = ?, updated_at = ?, meta = ?, "
                "archived = ? WHERE session_id = ?",
                (
                    row.cwd,
                    row.additional_directories,
                    row.mcp_servers,
                    row.mode_id,
                    row.config_values,
                    row.title,
                    row.updated_at,
                    row.meta,
                    row.archived,
                    session_id,
                ),
            )
        return from_row(row)

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        """Append one event to the session's history; its `seq` (KeyError for an
        unknown session)."""
        data = check_event_args(kind, payload)
        with self._write() as conn:
            # seq is computed under the write lock, so concurrent appenders (threads or
            # processes) serialise here and can never pick the same seq.
            row = conn.execute(_LAST_SEQ, {"sid": session_id}).fetchone()
            if row is None:
                raise KeyError(session_id)
            updated_at, last_seq = row
            seq: int = last_seq + 1
            now = bump(updated_at)
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, payload, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, kind, data, now),
            )
            conn.execute(
                "UPDATE sessions SET updated_at = ? WHERE session_id = ?", (now, session_id)
            )
        return seq

    def append_events(self, events: Sequence[NewEvent]) -> list[int | Exception]:
        """Append events of any sessions in one transaction (see `SessionStore`): each
        session's `updated_at` is bumped once, its events share that time and are written
        as one row (a run, see `_migrate_2_to_3`)."""
        by_session: dict[str, list[tuple[int, str, bytes]]] = {}  # sid -> (index, kind, data)
        for index, (sid, kind, payload) in enumerate(events):
            if type(payload) is not bytes or type(kind) is not str or not kind:
                payload = check_event_args(kind, payload)
            run = by_session.get(sid)
            if run is None:
                run = by_session[sid] = []
            run.append((index, kind, payload))
        results: list[int | Exception] = [0] * len(events)
        with self._write() as conn:
            rows: list[tuple[str, int, str, bytes, str, int]] = []
            touched: list[tuple[str, str]] = []
            for sid, run in by_session.items():
                found = conn.execute(_LAST_SEQ, {"sid": sid}).fetchone()
                if found is None:
                    for index, _, _ in run:
                        results[index] = KeyError(sid)
                    continue
                first = found[1] + 1
                now = bump(found[0])
                for offset, (index, _, _) in enumerate(run):
                    results[index] = first + offset
                if len(run) == 1:
                    rows.append((sid, first, run[0][1], run[0][2], now, 1))
                else:
                    packed = pack_run([(kind, data) for _, kind, data in run])
                    rows.append((sid, first + len(run) - 1, RUN_KIND, packed, now, len(run)))
                touched.append((now, sid))
            conn.executemany(
                "INSERT INTO events (session_id, seq, kind, payload, created_at, n) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.executemany("UPDATE sessions SET updated_at = ? WHERE session_id = ?", touched)
        return results

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        """The session's events with `seq` > `after_seq`, in order, read in batches
        (nothing for an unknown session)."""
        check_after_seq(after_seq)
        with self._lock:
            self._connection()  # fail now, not on first next(), if closed
        return self._iter_events(session_id, after_seq)

    def _iter_events(self, session_id: str, after_seq: int) -> Iterator[StoredEvent]:
        # Each batch a short read under the lock; no transaction or lock is held while the
        # caller consumes events, so it may append/update meanwhile. Events appended
        # during iteration may or may not be included; none is seen twice.
        def fetch(last: int) -> list[tuple[Any, ...]]:
            rows = self._read_all(
                "SELECT seq, kind, payload, created_at, n FROM events "
                "WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, last, EVENT_BATCH),
            )
            return unpack_runs(rows, last)

        return events_in_batches(fetch, after_seq)

    def list_sessions(
        self,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        archived: ArchiveFilter = "exclude",
    ) -> tuple[list[SessionRecord], str | None]:
        """One page of sessions, newest first, and the cursor of the next page (None
        on the last); see `SessionStore.list_sessions`."""
        check_list_args(cwd, limit, archived)
        sql, params = list_query(
            f"SELECT {ROW_COLUMNS} FROM sessions", cwd, cursor, limit, archived, mark="?"
        )
        rows = self._read_all(sql, tuple(params))
        return cut_page(rows, limit, lambda row: from_row(StoredRow._make(row)))

    def delete(self, session_id: str) -> None:
        """Remove the session and its events (an unknown session is a no-op)."""
        with self._write() as conn:
            conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

    def fork(
        self,
        source_id: str,
        new_id: str,
        *,
        cwd: str | None = None,
        additional_directories: list[str] | None = None,
    ) -> SessionRecord:
        """Copy a session (record and history) under `new_id`, with a new `cwd` or
        directories if given (KeyError, ValueError as `SessionStore.fork` says)."""
        check_id(new_id, "new_id")
        with self._write() as conn:
            source = self._select_record(conn, source_id)
            if source is None:
                raise KeyError(source_id)
            new = fork_record(source, new_id, cwd, additional_directories)
            self._insert_record(conn, new)
            # Events keep their seq, kind, payload and original created_at.
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, payload, created_at, n) "
                "SELECT ?, seq, kind, payload, created_at, n FROM events "
                "WHERE session_id = ? ORDER BY seq",
                (new_id, source_id),
            )
        return from_row(to_row(new))

    def close(self) -> None:
        """Release the store; later calls raise RuntimeError. Idempotent."""
        with self._lock:
            conn, self._conn = self._conn, None
            self._closed = True
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA optimize")
                conn.close()
                logger.debug("closed session store %s", self.path)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SqliteSessionStore {self.path!r} ({state})>"


# A session's row and the seq of its newest event (the last of the newest run).
_LAST_SEQ = (
    "SELECT updated_at, COALESCE((SELECT seq FROM events WHERE session_id = :sid "
    "ORDER BY seq DESC LIMIT 1), 0) FROM sessions WHERE session_id = :sid"
)


def _prepare_file(path: Path) -> None:
    """Create parent directories, and the file itself owner-only (prompts are private).

    SQLite gives the -wal and -shm files the same permissions as the database file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _retry_busy(op: Callable[[], Any]) -> Any:
    """Run `op`, retrying "database is locked" until the busy timeout has passed.

    The busy handler covers most statements, but a few (changing the journal mode, the
    very first lock on a file) can report SQLITE_BUSY straight away.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    delay = 0.001
    while True:
        try:
            return op()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
