"""Persistent session storage for ACP agents.

The agent runtime records everything it needs to rebuild a session -- the session's
settings (`SessionRecord`) and the ordered stream of events it produced (every
`session/update` it sent, every user prompt, ...) -- and replays the events on
`session/load`. Events are opaque here: a `kind` string plus a payload that the caller
has already encoded to bytes. Nothing in this module knows about protocol types;
records hold plain, JSON-able Python data.

Two implementations share one set of semantics:

* `SqliteSessionStore` -- a single SQLite file (WAL mode), safe to share between
  threads and between processes.
* `MemorySessionStore` -- the same behaviour in memory, for tests and ephemeral agents.

Timestamps are ISO 8601 UTC strings with microseconds and a trailing "Z"
(``2025-01-31T12:00:00.123456Z``). They are always written in that fixed-width form, so
string order is time order. A session's ``updated_at`` is strictly increasing: a bump is
``max(now, previous + 1 microsecond)``, so it never goes backwards even if the wall clock does.

The store is synchronous: SQLite appends take tens of microseconds, so the runtime
calls it straight from the event loop.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import contextlib
import copy
import dataclasses
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Protocol, Self, runtime_checkable

__all__ = [
    "MemorySessionStore",
    "SCHEMA_VERSION",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoredEvent",
    "default_store_path",
]

logger = logging.getLogger(__name__)

_APP_NAME = "acpstack"
_DB_FILENAME = "sessions.sqlite3"
_BUSY_TIMEOUT_S = 5.0
_EVENT_BATCH = 256
_CURSOR_VERSION = 1


# --------------------------------------------------------------------------- records


@dataclass(slots=True)
class SessionRecord:
    """Everything needed to rebuild a session, except its event history."""

    session_id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    mcp_servers: list[Any] = field(default_factory=list)  # JSON-able
    mode_id: str | None = None
    config_values: dict[str, Any] = field(default_factory=dict)  # JSON-able
    title: str | None = None
    created_at: str = ""  # ISO 8601 UTC with "Z"; set by the store on create if empty
    updated_at: str = ""  # ISO 8601 UTC; bumped on every change and every appended event
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class StoredEvent:
    """One recorded event. ``seq`` runs 1, 2, 3, ... per session, without gaps."""

    seq: int
    kind: str
    payload: bytes
    created_at: str


# Fields `update()` accepts (everything but the identity and the creation time).
_UPDATABLE = frozenset(f.name for f in dataclasses.fields(SessionRecord)) - {
    "session_id",
    "created_at",
}


@runtime_checkable
class SessionStore(Protocol):
    """What the agent runtime needs from a session store.

    The ``supports_*`` flags tell the runtime which session capabilities it may
    advertise (``session/list``, deletion, ``session/fork``).
    """

    supports_list: bool
    supports_delete: bool
    supports_fork: bool

    def create(self, record: SessionRecord) -> SessionRecord:
        """Store a new session and return the stored copy (timestamps filled in).

        Raises ValueError if a session with that id already exists.
        """
        ...

    def get(self, session_id: str) -> SessionRecord | None:
        """Return a fresh copy of the record, or None if there is no such session."""
        ...

    def update(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change fields (not session_id/created_at) and bump updated_at.

        Raises KeyError for an unknown session, TypeError for an unknown field.
        """
        ...

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        """Durably append one event (one transaction) and return its seq.

        Also bumps updated_at. Raises KeyError for an unknown session.
        """
        ...

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        """Events with seq > after_seq, in order. Unknown session: nothing."""
        ...

    def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionRecord], str | None]:
        """One page of sessions, newest first; returns (page, next cursor or None)."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove a session and its events. Deleting an unknown session is a no-op."""
        ...

    def fork(
        self,
        source_id: str,
        new_id: str,
        *,
        cwd: str | None = None,
        additional_directories: builtins.list[str] | None = None,
    ) -> SessionRecord:
        """Copy a session (record and full event history) under a new id.

        Raises KeyError for an unknown source, ValueError if new_id already exists.
        """
        ...

    def close(self) -> None:
        """Release resources. Idempotent."""
        ...


# --------------------------------------------------------------------------- helpers


def default_store_path() -> Path:
    """Where `SqliteSessionStore()` keeps its database by default.

    ``platformdirs.user_data_dir("acpstack") / "sessions.sqlite3"``; without platformdirs,
    ``$XDG_DATA_HOME/acpstack`` (if set to an absolute path) or ``~/.local/share/acpstack``.
    """
    try:
        import platformdirs
    except ImportError:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
        data_dir = base / _APP_NAME
    else:
        # appauthor=False: no extra "<author>" level on Windows.
        data_dir = Path(platformdirs.user_data_dir(_APP_NAME, appauthor=False))
    return data_dir / _DB_FILENAME


_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_ONE_US = timedelta(microseconds=1)


def _format_ts(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime(_TS_FORMAT)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _parse_ts(value: str, what: str) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be an ISO 8601 string, got {type(value).__name__}")
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{what} is not an ISO 8601 timestamp: {value!r}") from None
    if dt.tzinfo is None:  # naive timestamps are taken to be UTC
        dt = dt.replace(tzinfo=UTC)
    return dt


def _normalize_ts(value: str, what: str) -> str:
    """Canonical fixed-width UTC form, so that string order is time order."""
    return _format_ts(_parse_ts(value, what))


def _bump(previous: str | None) -> str:
    """A new updated_at: now, but strictly after `previous` even if the clock stepped back."""
    now = _utcnow()
    if previous:
        try:
            floor = _parse_ts(previous, "updated_at") + _ONE_US
        except (TypeError, ValueError):
            pass
        else:
            if now < floor:
                now = floor
    return _format_ts(now)


_orjson: ModuleType | None
try:  # orjson is optional: faster, but the json module gives the same results.
    import orjson as _orjson_module
except ImportError:  # pragma: no cover - exercised only without orjson installed
    _orjson = None
else:
    _orjson = _orjson_module


def _json_dumps(value: Any) -> str:
    if _orjson is not None:
        try:
            text: str = _orjson.dumps(value, option=_orjson.OPT_NON_STR_KEYS).decode()
            return text
        except (TypeError, _orjson.JSONEncodeError):
            pass  # e.g. integers beyond 64 bits: let the json module decide
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _json_loads(text: str | bytes) -> Any:
    if _orjson is not None:
        return _orjson.loads(text)
    return json.loads(text)


def _check_id(value: object, what: str = "session_id") -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value


def _check_field(name: str, value: Any) -> Any:
    """Type-check one record field; return the value to store (JSON-normalised later)."""
    if name == "cwd":
        if not isinstance(value, str) or not value:
            raise TypeError("cwd must be a non-empty str")
    elif name in ("mode_id", "title"):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    elif name == "additional_directories":
        if not isinstance(value, list | tuple) or not all(isinstance(d, str) for d in value):
            raise TypeError("additional_directories must be a list of str")
    elif name == "mcp_servers":
        if not isinstance(value, list | tuple):
            raise TypeError(f"mcp_servers must be a list, got {type(value).__name__}")
    elif name in ("config_values", "meta"):
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    elif name in ("created_at", "updated_at"):
        return _normalize_ts(value, name)
    return value


# The stored ("row") form of a record: JSON text for containers, shared by both stores
# so that they accept and return exactly the same data.
_Row = tuple[str, str, str, str, str | None, str, str | None, str, str, str]

_ROW_COLUMNS = (
    "session_id, cwd, additional_directories, mcp_servers, mode_id, config_values, "
    "title, created_at, updated_at, meta"
)


def _record_to_row(r: SessionRecord) -> _Row:
    return (
        r.session_id,
        r.cwd,
        _json_dumps(builtins.list(r.additional_directories)),
        _json_dumps(builtins.list(r.mcp_servers)),
        r.mode_id,
        _json_dumps(dict(r.config_values)),
        r.title,
        r.created_at,
        r.updated_at,
        _json_dumps(dict(r.meta)),
    )


def _row_to_record(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        session_id=row[0],
        cwd=row[1],
        additional_directories=_json_loads(row[2]),
        mcp_servers=_json_loads(row[3]),
        mode_id=row[4],
        config_values=_json_loads(row[5]),
        title=row[6],
        created_at=row[7],
        updated_at=row[8],
        meta=_json_loads(row[9]),
    )


def _prepare_new(record: SessionRecord) -> SessionRecord:
    """Validate a record for create(); fill in timestamps. Does not mutate the argument."""
    if not isinstance(record, SessionRecord):
        raise TypeError(f"expected a SessionRecord, got {type(record).__name__}")
    _check_id(record.session_id)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(SessionRecord):
        if f.name == "session_id":
            continue
        value = getattr(record, f.name)
        if f.name in ("created_at", "updated_at") and not value:
            continue
        values[f.name] = _check_field(f.name, value)
    created = values.setdefault("created_at", _format_ts(_utcnow()))
    values.setdefault("updated_at", created)
    return SessionRecord(session_id=record.session_id, **values)


def _apply_changes(current: SessionRecord, changes: dict[str, Any]) -> SessionRecord:
    """A copy of `current` with validated `changes`; updated_at bumped unless given."""
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise TypeError(
            f"cannot update {', '.join(sorted(unknown))}; updatable fields: "
            f"{', '.join(sorted(_UPDATABLE))}"
        )
    new = copy.copy(current)
    for name, value in changes.items():
        setattr(new, name, _check_field(name, value))
    if "updated_at" not in changes:
        new.updated_at = _bump(current.updated_at)
    return new


def _encode_cursor(updated_at: str, session_id: str) -> str:
    raw = json.dumps([_CURSOR_VERSION, updated_at, session_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    """Inverse of `_encode_cursor`; ValueError with a clear message for anything else."""
    if not isinstance(cursor, str) or not cursor:
        raise ValueError("invalid session list cursor: expected a non-empty string")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"invalid session list cursor {cursor[:64]!r}: not a cursor returned by list()"
        ) from None
    if (
        not isinstance(data, builtins.list)
        or len(data) != 3
        or data[0] != _CURSOR_VERSION
        or not isinstance(data[1], str)
        or not isinstance(data[2], str)
    ):
        raise ValueError(
            f"invalid session list cursor {cursor[:64]!r}: not a cursor returned by list()"
        )
    return data[1], data[2]


def _check_list_args(cwd: str | None, limit: int) -> None:
    if cwd is not None and not isinstance(cwd, str):
        raise TypeError("cwd must be a str or None")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")


def _check_event_args(kind: str, payload: bytes) -> bytes:
    if not isinstance(kind, str) or not kind:
        raise TypeError("kind must be a non-empty str")
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
    return bytes(payload)


def _check_after_seq(after_seq: int) -> None:
    if not isinstance(after_seq, int) or isinstance(after_seq, bool) or after_seq < 0:
        raise ValueError(f"after_seq must be an int >= 0, got {after_seq!r}")


# --------------------------------------------------------------------------- SQLite

SCHEMA_VERSION = 1


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


# MIGRATIONS[v] upgrades a database from user_version v to v + 1. Each runs inside the
# same BEGIN IMMEDIATE transaction that then sets the new user_version, so an upgrade is
# all-or-nothing and two processes opening an old file at once migrate it only once.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _migrate_0_to_1}


class SqliteSessionStore(SessionStore):
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
        conn = sqlite3.connect(
            self.path,
            timeout=_BUSY_TIMEOUT_S,
            isolation_level=None,  # autocommit; we issue BEGIN IMMEDIATE/COMMIT ourselves
            check_same_thread=False,  # the lock serialises all use of the connection
        )
        try:
            self._configure(conn)
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

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("session store is closed")
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
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _read_one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._connection().execute(sql, params).fetchone()
            return row

    def _read_all(self, sql: str, params: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            rows: builtins.list[tuple[Any, ...]] = (
                self._connection().execute(sql, params).fetchall()
            )
            return rows

    @staticmethod
    def _select_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
        row = conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return None if row is None else _row_to_record(row)

    @staticmethod
    def _insert_record(conn: sqlite3.Connection, record: SessionRecord) -> None:
        try:
            conn.execute(
                f"INSERT INTO sessions ({_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _record_to_row(record),
            )
        except sqlite3.IntegrityError:
            raise ValueError(f"session {record.session_id!r} already exists") from None

    # -- SessionStore ---------------------------------------------------------------

    def create(self, record: SessionRecord) -> SessionRecord:
        new = _prepare_new(record)
        with self._write() as conn:
            self._insert_record(conn, new)
        return _row_to_record(_record_to_row(new))  # exactly what a later get() returns

    def get(self, session_id: str) -> SessionRecord | None:
        row = self._read_one(
            f"SELECT {_ROW_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        )
        return None if row is None else _row_to_record(row)

    def update(self, session_id: str, **changes: Any) -> SessionRecord:
        with self._write() as conn:
            current = self._select_record(conn, session_id)
            if current is None:
                raise KeyError(session_id)
            new = _apply_changes(current, changes)
            row = _record_to_row(new)
            conn.execute(
                "UPDATE sessions SET cwd = ?, additional_directories = ?, mcp_servers = ?, "
                "mode_id = ?, config_values = ?, title = ?, updated_at = ?, meta = ? "
                "WHERE session_id = ?",
                (row[1], row[2], row[3], row[4], row[5], row[6], row[8], row[9], session_id),
            )
        return _row_to_record(row)

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        data = _check_event_args(kind, payload)
        with self._write() as conn:
            # seq is computed under the write lock, so concurrent appenders (threads or
            # processes) serialise here and can never pick the same seq.
            row = conn.execute(
                "SELECT updated_at, COALESCE((SELECT seq FROM events WHERE session_id = :sid "
                "ORDER BY seq DESC LIMIT 1), 0) FROM sessions WHERE session_id = :sid",
                {"sid": session_id},
            ).fetchone()
            if row is None:
                raise KeyError(session_id)
            seq: int = row[1] + 1
            now = _bump(row[0])
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, payload, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, kind, data, now),
            )
            conn.execute(
                "UPDATE sessions SET updated_at = ? WHERE session_id = ?", (now, session_id)
            )
        return seq

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        _check_after_seq(after_seq)
        with self._lock:
            self._connection()  # fail now, not on first next(), if closed
        return self._iter_events(session_id, after_seq)

    def _iter_events(self, session_id: str, after_seq: int) -> Iterator[StoredEvent]:
        # Fetched in batches, each a short read under the lock; no transaction or lock is
        # held while the caller consumes events, so it may append/update meanwhile. Events
        # appended during iteration may or may not be included; none is seen twice.
        last = after_seq
        while True:
            rows = self._read_all(
                "SELECT seq, kind, payload, created_at FROM events "
                "WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, last, _EVENT_BATCH),
            )
            for seq, kind, payload, created_at in rows:
                yield StoredEvent(seq, kind, bytes(payload), created_at)
            if len(rows) < _EVENT_BATCH:
                return
            last = rows[-1][0]

    def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionRecord], str | None]:
        _check_list_args(cwd, limit)
        where: builtins.list[str] = []
        params: builtins.list[Any] = []
        if cwd is not None:
            where.append("cwd = ?")
            params.append(cwd)
        if cursor is not None:
            after_updated, after_id = _decode_cursor(cursor)
            where.append("(updated_at, session_id) < (?, ?)")
            params += [after_updated, after_id]
        sql = f"SELECT {_ROW_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, session_id DESC LIMIT ?"
        params.append(limit + 1)  # one extra row tells us whether there is a next page
        rows = self._read_all(sql, tuple(params))
        page = [_row_to_record(r) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            next_cursor = _encode_cursor(page[-1].updated_at, page[-1].session_id)
        return page, next_cursor

    def delete(self, session_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

    def fork(
        self,
        source_id: str,
        new_id: str,
        *,
        cwd: str | None = None,
        additional_directories: builtins.list[str] | None = None,
    ) -> SessionRecord:
        _check_id(new_id, "new_id")
        with self._write() as conn:
            source = self._select_record(conn, source_id)
            if source is None:
                raise KeyError(source_id)
            new = _fork_record(source, new_id, cwd, additional_directories)
            self._insert_record(conn, new)
            # Events keep their seq, kind, payload and original created_at.
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, payload, created_at) "
                "SELECT ?, seq, kind, payload, created_at FROM events "
                "WHERE session_id = ? ORDER BY seq",
                (new_id, source_id),
            )
        return _row_to_record(_record_to_row(new))

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA optimize")
                conn.close()
                logger.debug("closed session store %s", self.path)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else "open"
        return f"<SqliteSessionStore {self.path!r} ({state})>"


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


def _fork_record(
    source: SessionRecord,
    new_id: str,
    cwd: str | None,
    additional_directories: builtins.list[str] | None,
) -> SessionRecord:
    new = copy.copy(source)
    new.session_id = new_id
    if cwd is not None:
        new.cwd = _check_field("cwd", cwd)
    if additional_directories is not None:
        new.additional_directories = _check_field("additional_directories", additional_directories)
    new.created_at = new.updated_at = _format_ts(_utcnow())
    return new


# --------------------------------------------------------------------------- memory


class MemorySessionStore(SessionStore):
    """A `SessionStore` kept in memory, with the same semantics as `SqliteSessionStore`.

    Records are kept in the same JSON-encoded form as in SQLite, so the same values are
    accepted and returned (e.g. tuples come back as lists) and callers never share
    mutable state with the store.
    """

    supports_list = True
    supports_delete = True
    supports_fork = True

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._rows: dict[str, _Row] = {}
        self._events: dict[str, builtins.list[StoredEvent]] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("session store is closed")

    def create(self, record: SessionRecord) -> SessionRecord:
        new = _prepare_new(record)
        row = _record_to_row(new)
        with self._lock:
            self._check_open()
            if new.session_id in self._rows:
                raise ValueError(f"session {new.session_id!r} already exists")
            self._rows[new.session_id] = row
            self._events[new.session_id] = []
        return _row_to_record(row)

    def get(self, session_id: str) -> SessionRecord | None:
        with self._lock:
            self._check_open()
            row = self._rows.get(session_id)
        return None if row is None else _row_to_record(row)

    def update(self, session_id: str, **changes: Any) -> SessionRecord:
        with self._lock:
            self._check_open()
            row = self._rows.get(session_id)
            if row is None:
                raise KeyError(session_id)
            new_row = _record_to_row(_apply_changes(_row_to_record(row), changes))
            self._rows[session_id] = new_row
        return _row_to_record(new_row)

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        data = _check_event_args(kind, payload)
        with self._lock:
            self._check_open()
            row = self._rows.get(session_id)
            if row is None:
                raise KeyError(session_id)
            log = self._events[session_id]
            now = _bump(row[8])
            seq = len(log) + 1
            log.append(StoredEvent(seq, kind, data, now))
            self._rows[session_id] = (*row[:8], now, row[9])
        return seq

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        _check_after_seq(after_seq)
        with self._lock:
            self._check_open()
        return self._iter_events(session_id, after_seq)

    def _iter_events(self, session_id: str, after_seq: int) -> Iterator[StoredEvent]:
        # Same contract as the SQLite store: batches taken under the lock, nothing held
        # while the caller consumes them. StoredEvent payloads are immutable bytes; each
        # event is copied so callers cannot alter the stored history.
        last = after_seq
        while True:
            with self._lock:
                self._check_open()
                log = self._events.get(session_id)
                batch = [] if log is None else log[last : last + _EVENT_BATCH]
            for ev in batch:
                yield StoredEvent(ev.seq, ev.kind, ev.payload, ev.created_at)
            if len(batch) < _EVENT_BATCH:
                return
            last = batch[-1].seq

    def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionRecord], str | None]:
        _check_list_args(cwd, limit)
        after = _decode_cursor(cursor) if cursor is not None else None
        with self._lock:
            self._check_open()
            rows = [
                r
                for r in self._rows.values()
                if (cwd is None or r[1] == cwd) and (after is None or (r[8], r[0]) < after)
            ]
        rows.sort(key=lambda r: (r[8], r[0]), reverse=True)
        page = [_row_to_record(r) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            next_cursor = _encode_cursor(page[-1].updated_at, page[-1].session_id)
        return page, next_cursor

    def delete(self, session_id: str) -> None:
        with self._lock:
            self._check_open()
            self._rows.pop(session_id, None)
            self._events.pop(session_id, None)

    def fork(
        self,
        source_id: str,
        new_id: str,
        *,
        cwd: str | None = None,
        additional_directories: builtins.list[str] | None = None,
    ) -> SessionRecord:
        _check_id(new_id, "new_id")
        with self._lock:
            self._check_open()
            row = self._rows.get(source_id)
            if row is None:
                raise KeyError(source_id)
            if new_id in self._rows:
                raise ValueError(f"session {new_id!r} already exists")
            new = _fork_record(_row_to_record(row), new_id, cwd, additional_directories)
            new_row = _record_to_row(new)
            self._rows[new_id] = new_row
            self._events[new_id] = builtins.list(self._events[source_id])  # events immutable
        return _row_to_record(new_row)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._rows.clear()
            self._events.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
