"""`PostgresSessionStore`: sessions in PostgreSQL, shared by several processes (nodes).

psycopg 3, synchronous, with its connection pool. The store interface is synchronous and
the runtime calls it from the event loop, so every hot operation is one statement in
autocommit mode: one round trip and one transaction (an append is an UPDATE of the
session row that takes the next `seq` and the new `updated_at`, and an INSERT of the
event, in one statement). The runtime appends through `append_events`, a group commit of
every session's waiting events in one transaction, off the event loop (see `_writer.py`),
so commits wait for the server's disk (`synchronous_commit = on`, PostgreSQL's default):
an acknowledged event survives a crash of the database server too. An operator may trade
that for latency with `options=-csynchronous_commit%3Doff` in the URL: a server crash can
then lose the last fraction of a second of acknowledged events, never consistency
(docs/deployment.md).

One writer per session (`SessionLeases`): the session row names the node that has it live
(`owner`, a random 63-bit key per store). Every write carries that fence in its WHERE
clause, so a node that does not hold a session can never write to it, whatever the
timing. Each store also holds a session-level advisory lock on its key over a connection
of its own (its presence): while that connection lives, no other node may take its
sessions; when the process dies the server drops the connection and the lock with it, and
the next node asked to load or resume takes over at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Unpack

from acpstack.agent._store import _pg_schema
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
    SessionBusy,
    SessionChanges,
    SessionLeases,
    SessionRecord,
    SessionStore,
    StoredEvent,
)
from acpstack.agent._store._rows import (
    StoredRow,
    check_after_seq,
    check_event_args,
    check_id,
    check_list_args,
    fork_record,
    from_row,
    prepare_new,
    stored_changes,
    to_row,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

logger = logging.getLogger("acpstack.agent.store")

# How long a call waits for a connection of the pool before it connects by itself (the
# pool may be in its reconnect back-off after an outage, with the server back already).
LEND_WAIT = 1.0
INSTALL_HINT = 'in the acpstack checkout, pip install ".[postgres]" (or pip install "psycopg[binary,pool]>=3.2")'
# Nothing to change by default: commits wait for the server's disk (see the module docstring).
STORE_SETTINGS: dict[str, str] = {}
# Seconds a check of the presence connection stands for (see _ensure_presence). A node
# whose presence broke can lose its sessions to another node at any moment anyway (its
# writes are then refused by the fence); the check only makes it take its lock again.
PRESENCE_FRESH = 1.0
# The server drops a vanished node's presence connection after about 25 s (over TCP).
PRESENCE_SETTINGS = {
    "tcp_keepalives_idle": "10",
    "tcp_keepalives_interval": "5",
    "tcp_keepalives_count": "3",
}


def _ts(column: str) -> str:
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"


_ROW = (
    "session_id, cwd, additional_directories, mcp_servers, mode_id, config_values, title, "
    f"{_ts('created_at')}, {_ts('updated_at')}, meta, archived"
)
# A write goes through when this store holds the session, or when it does not think it
# does and nobody does (a session it holds but lost to another node stays closed to it).
_FENCE = "(owner = %(me)s OR (owner IS NULL AND NOT %(held)s))"
_APPEND = f"""
WITH bumped AS (
    UPDATE acpstack_sessions
    SET last_seq = last_seq + 1,
        updated_at = GREATEST(%(now)s, updated_at + interval '1 microsecond')
    WHERE session_id = %(sid)s AND {_FENCE}
    RETURNING last_seq, updated_at
)
INSERT INTO acpstack_events (session_id, seq, kind, payload, created_at)
SELECT %(sid)s, last_seq, %(kind)s, %(payload)s, updated_at FROM bumped
RETURNING seq
"""
# A batch in one statement (one round trip, its own transaction): each session's row
# takes the seqs of its run of events (fenced by this node's lease), and the run is
# inserted as one row whose seq is the run's last, stamped with the row's new updated_at.
_APPEND_RUNS = """
WITH v AS (
    SELECT * FROM unnest(
        %(sids)s::text[], %(counts)s::bigint[], %(held)s::boolean[],
        %(kinds)s::text[], %(payloads)s::bytea[]
    ) AS v(sid, n, held, kind, payload)
), taken AS (
    UPDATE acpstack_sessions AS s
    SET last_seq = s.last_seq + v.n,
        updated_at = GREATEST(%(now)s, s.updated_at + interval '1 microsecond')
    FROM v
    WHERE s.session_id = v.sid AND (s.owner = %(me)s OR (s.owner IS NULL AND NOT v.held))
    RETURNING s.session_id, s.last_seq, s.updated_at, v.n, v.kind, v.payload
), stored AS (
    INSERT INTO acpstack_events (session_id, seq, kind, payload, created_at, n)
    SELECT session_id, last_seq, kind, payload, updated_at, n FROM taken
)
SELECT session_id, last_seq FROM taken
"""


def _acquire_sql(only_if: str, returning: str) -> str:
    """The statement that makes this node the session's holder when nobody live holds it
    (and `only_if`), returning `returning`."""
    return f"""
UPDATE acpstack_sessions SET owner = %(me)s, owner_name = %(name)s
WHERE session_id = %(sid)s{only_if}
  AND CASE WHEN owner IS NULL OR owner = %(me)s THEN true
           ELSE pg_try_advisory_xact_lock_shared(owner) END
RETURNING {returning}
"""


_ACQUIRE = _acquire_sql("", "1")
# for a session whose meta says it belongs to `principal` (any, when NULL), returning its
# record and last seq: a resume's read and lease in one round trip
_ACQUIRE_OWNED = _acquire_sql(
    "\n  AND (%(principal)s::text IS NULL OR meta::jsonb ->> %(owner_key)s = %(principal)s::text)",
    f"{_ROW}, last_seq",
)
_INSERT = (
    "INSERT INTO acpstack_sessions (session_id, cwd, additional_directories, mcp_servers, "
    "mode_id, config_values, title, created_at, updated_at, meta, archived, last_seq) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::timestamptz, %s::timestamptz, %s, %s, %s)"
)


def _import_driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ImportError(
            f"the PostgreSQL session store needs psycopg 3 and psycopg-pool: {INSTALL_HINT}"
        ) from exc
    return psycopg, psycopg_pool


def _with_settings(params: dict[str, Any], settings: dict[str, str]) -> dict[str, Any]:
    """libpq parameters with server `settings` added to `options` (the URL's own win)."""
    given = str(params.get("options", ""))
    added = [f"-c {name}={value}" for name, value in settings.items() if name not in given]
    return {**params, "options": " ".join([given, *added]).strip()}


class PostgresSessionStore(ClosingStore, SessionStore, SessionLeases):
    """A `SessionStore` in PostgreSQL (a ``postgresql://`` URL), with `SessionLeases`.

    Safe to use from several threads (a pool of up to `pool_size` connections, opened as
    they are needed) and from several processes on several machines at once. Needs the
    `postgres` extra.
    """

    supports_list = True
    supports_delete = True
    supports_fork = True

    def __init__(self, url: str, *, pool_size: int = 12, connect_timeout: float = 10.0) -> None:
        driver, pool_module = _import_driver()
        self._psycopg = driver
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}  # session -> acquires not yet released
        self._presence_checked = -PRESENCE_FRESH  # when the presence connection last answered
        # the writer may run this many calls (reads, leases) at once beside its batches:
        # a burst of resumes after a failover does not queue behind a few connections
        # (with 4, a server's 170 resumes took 2.0-3.1 s each in the failover benchmark;
        # with 12, 1.3-1.8 s)
        self.concurrent_calls: int = max(1, pool_size - 1)
        self.key: int = secrets.randbits(63)  # this node, as the owner of its sessions
        self.name: str = f"{socket.gethostname()}:{os.getpid()}"
        params: dict[str, Any] = {
            "connect_timeout": str(max(1, round(connect_timeout))),
            **driver.conninfo.conninfo_to_dict(url),  # the URL's own settings win
        }
        self._presence_params = _with_settings(params, PRESENCE_SETTINGS)
        self._store_params = _with_settings(params, STORE_SETTINGS)
        self._lend_timeout = connect_timeout
        self._pool_timeout: type[Exception] = pool_module.PoolTimeout
        self._pool: ConnectionPool[Any] | None = None
        # Connect once directly first: a failure says why (a pool would only time out).
        self._presence: psycopg.Connection[Any] | None = self._connect_presence()
        try:
            _pg_schema.migrate(self._presence)
            self._pool = pool_module.ConnectionPool(
                kwargs={**self._store_params, "autocommit": True},
                min_size=1,
                max_size=pool_size,
                open=True,
                name="acpstack-store",
                timeout=connect_timeout,
                num_workers=1,
                # A connection is checked before it is lent: after the server restarted (an
                # outage, a failover) no batch fails on a connection that died meanwhile.
                check=pool_module.ConnectionPool.check_connection,
            )
        except BaseException:
            self._presence.close()
            raise
        logger.debug("opened session store on PostgreSQL as node %s", self.name)

    # -- plumbing -----------------------------------------------------------------

    @contextlib.contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        pool = self._pool
        if pool is None:
            raise RuntimeError("session store is closed")
        try:
            conn = pool.getconn(timeout=min(LEND_WAIT, self._lend_timeout))
        except self._pool_timeout:
            # After an outage the pool retries with a growing back-off (seconds apart)
            # and lends nothing meanwhile, though the server may be back: this call
            # connects by itself (it fails at once if the server is still down).
            direct: psycopg.Connection[Any] = self._psycopg.connect(
                **self._store_params, autocommit=True
            )
            try:
                yield direct
            finally:
                direct.close()
            return
        try:
            yield conn
        finally:
            pool.putconn(conn)

    def _connect_presence(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] = self._psycopg.connect(
            **self._presence_params, autocommit=True
        )
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
            if row is None or not row[0]:  # only a 1 in 2**63 clash of random keys
                raise RuntimeError("session store: this node's presence lock is taken")
        except BaseException:
            conn.close()
            raise
        return conn

    def _ensure_presence(self) -> None:
        """Hold our presence lock again if its connection broke (e.g. a server restart).
        A check less than PRESENCE_FRESH seconds old stands: the resumes of a failover
        (hundreds at once) would each wait their turn for this one connection."""
        with self._lock:
            conn = self._presence
            if conn is None:
                raise RuntimeError("session store is closed")
            if not conn.closed:
                if time.monotonic() - self._presence_checked < PRESENCE_FRESH:
                    return
                try:
                    conn.execute("SELECT 1")
                    self._presence_checked = time.monotonic()
                    return
                except self._psycopg.Error:
                    conn.close()
            logger.warning("session store: the presence connection broke; reconnecting")
            self._presence = self._connect_presence()
            self._presence_checked = time.monotonic()

    def _args(self, session_id: str, **more: Any) -> dict[str, Any]:
        return {"sid": session_id, "me": self.key, "held": session_id in self._held, **more}

    @staticmethod
    def _refusal(conn: psycopg.Connection[Any], session_id: str) -> Exception:
        """Why a fenced write touched no row: no such session, or another node has it."""
        row = conn.execute(
            "SELECT 1 FROM acpstack_sessions WHERE session_id = %s", (session_id,)
        ).fetchone()
        return KeyError(session_id) if row is None else SessionBusy(session_id)

    @staticmethod
    def _record(values: tuple[Any, ...]) -> SessionRecord:
        return from_row(StoredRow._make(values))

    def _insert(self, conn: psycopg.Connection[Any], record: SessionRecord, last_seq: int) -> None:
        try:
            row = to_row(record)
            conn.execute(_INSERT, (*row._replace(archived=bool(row.archived)), last_seq))
        except self._psycopg.errors.UniqueViolation:
            raise ValueError(f"session {record.session_id!r} already exists") from None

    # -- SessionStore ---------------------------------------------------------------

    def create(self, record: SessionRecord) -> SessionRecord:
        """Store a new session record; returns it as stored."""
        new = prepare_new(record)
        with self._conn() as conn:
            self._insert(conn, new, 0)
        return from_row(to_row(new))

    def get(self, session_id: str) -> SessionRecord | None:
        """The session's record, or None."""
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_ROW} FROM acpstack_sessions WHERE session_id = %s",
                (session_id,),
                prepare=True,
            ).fetchone()
        return None if row is None else self._record(row)

    def update(self, session_id: str, **changes: Unpack[SessionChanges]) -> SessionRecord:
        """Change fields of a record in one statement, fenced by this node's lease."""
        values = stored_changes(changes)
        sets = [f"{name} = %({name})s" for name in values if name != "updated_at"]
        if "updated_at" in values:
            sets.append("updated_at = %(updated_at)s::timestamptz")
        else:
            sets.append("updated_at = GREATEST(%(now)s, updated_at + interval '1 microsecond')")
        sql = (
            f"UPDATE acpstack_sessions SET {', '.join(sets)} "
            f"WHERE session_id = %(sid)s AND {_FENCE} RETURNING {_ROW}"
        )
        args = self._args(session_id, now=datetime.now(UTC), **values)
        with self._conn() as conn:
            row = conn.execute(sql, args).fetchone()
            if row is None:
                raise self._refusal(conn, session_id)
        return self._record(row)

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        """Append one history event (one transaction); returns its sequence number."""
        data = check_event_args(kind, payload)
        args = self._args(session_id, now=datetime.now(UTC), kind=kind, payload=data)
        with self._conn() as conn:
            row = conn.execute(_APPEND, args, prepare=True).fetchone()
            if row is None:
                raise self._refusal(conn, session_id)
        seq: int = row[0]
        return seq

    def append_events(self, events: Sequence[NewEvent]) -> list[int | Exception]:
        """Append events of any sessions in one statement (see `SessionStore.append_events`
        and `_APPEND_RUNS`): each session's events are one row (a run, see
        `_paging.RUN_KIND`)."""
        by_session: dict[str, list[tuple[int, str, bytes]]] = {}  # sid -> (index, kind, data)
        for index, (sid, kind, payload) in enumerate(events):
            if type(payload) is not bytes or type(kind) is not str or not kind:
                payload = check_event_args(kind, payload)
            run = by_session.get(sid)
            if run is None:
                run = by_session[sid] = []
            run.append((index, kind, payload))
        sids = list(by_session)
        kinds: list[str] = []
        payloads: list[bytes] = []
        for sid in sids:
            run = by_session[sid]
            if len(run) == 1:
                kinds.append(run[0][1])
                payloads.append(run[0][2])
            else:
                kinds.append(RUN_KIND)
                payloads.append(pack_run([(kind, data) for _, kind, data in run]))
        results: list[int | Exception] = [0] * len(events)
        with self._conn() as conn:
            taken = conn.execute(
                _APPEND_RUNS,
                {
                    "sids": sids,
                    "counts": [len(by_session[sid]) for sid in sids],
                    "held": [sid in self._held for sid in sids],
                    "kinds": kinds,
                    "payloads": payloads,
                    "me": self.key,
                    "now": datetime.now(UTC),
                },
                prepare=True,
            ).fetchall()
            for sid, last in taken:
                run = by_session.pop(sid)
                first = last - len(run) + 1
                for offset, (index, _, _) in enumerate(run):
                    results[index] = first + offset
            for sid, run in by_session.items():  # not taken: unknown, or another node's
                refusal = self._refusal(conn, sid)
                for index, _, _ in run:
                    results[index] = refusal
        return results

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        """The session's history events after `after_seq`, in order."""
        check_after_seq(after_seq)
        if self._pool is None:
            raise RuntimeError("session store is closed")
        return self._iter_events(session_id, after_seq)

    def _iter_events(self, session_id: str, after_seq: int) -> Iterator[StoredEvent]:
        def fetch(last: int) -> list[Any]:
            with self._conn() as conn:
                rows = conn.execute(
                    f"SELECT seq, kind, payload, {_ts('created_at')}, n FROM acpstack_events "
                    "WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                    (session_id, last, EVENT_BATCH),
                    prepare=True,
                ).fetchall()
            return unpack_runs(rows, last)

        return events_in_batches(fetch, after_seq)

    def list_sessions(
        self,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        archived: ArchiveFilter = "exclude",
    ) -> tuple[list[SessionRecord], str | None]:
        """A page of sessions, most recently updated first, and the cursor of the next."""
        check_list_args(cwd, limit, archived)
        sql, params = list_query(
            f"SELECT {_ROW} FROM acpstack_sessions",
            cwd,
            cursor,
            limit,
            archived,
            mark="%s",
            timestamp="::timestamptz",
        )
        with self._conn() as conn:
            rows = conn.execute(sql, params).fetchall()
        return cut_page(rows, limit, self._record)

    def delete(self, session_id: str) -> None:
        """Remove the session, unless another live node has it (`SessionBusy`)."""
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                "SELECT owner, CASE WHEN owner IS NULL OR owner = %(me)s THEN true "
                "ELSE pg_try_advisory_xact_lock_shared(owner) END "
                "FROM acpstack_sessions WHERE session_id = %(sid)s FOR UPDATE",
                self._args(session_id),
            ).fetchone()
            if row is None:
                return
            if not row[1]:
                raise SessionBusy(session_id)
            conn.execute("DELETE FROM acpstack_sessions WHERE session_id = %s", (session_id,))
        with self._lock:
            self._held.pop(session_id, None)

    def fork(
        self,
        source_id: str,
        new_id: str,
        *,
        cwd: str | None = None,
        additional_directories: list[str] | None = None,
    ) -> SessionRecord:
        """Copy a session (its record and history) under a new id."""
        check_id(new_id, "new_id")
        with self._conn() as conn, conn.transaction():
            # FOR SHARE: appends to the source wait until its history is copied.
            row = conn.execute(
                f"SELECT {_ROW}, last_seq FROM acpstack_sessions WHERE session_id = %s FOR SHARE",
                (source_id,),
            ).fetchone()
            if row is None:
                raise KeyError(source_id)
            new = fork_record(self._record(row[:-1]), new_id, cwd, additional_directories)
            self._insert(conn, new, row[-1])
            # Events keep their seq, kind, payload and original created_at.
            conn.execute(
                "INSERT INTO acpstack_events (session_id, seq, kind, payload, created_at, n) "
                "SELECT %s, seq, kind, payload, created_at, n FROM acpstack_events "
                "WHERE session_id = %s",
                (new_id, source_id),
            )
        return from_row(to_row(new))

    # -- SessionLeases --------------------------------------------------------------

    def acquire(self, session_id: str) -> None:
        """Make this process the session's only writer (`SessionBusy` while another holds it)."""
        if self._take(_ACQUIRE, session_id) is None:
            with self._conn() as conn:
                raise self._refusal(conn, session_id)

    def acquire_owned(
        self, session_id: str, owner_key: str, principal: str | None
    ) -> tuple[SessionRecord, int] | None:
        """`acquire` and `get` in one statement, for a session whose `meta[owner_key]` is
        `principal` (any session when None): its record, now held here, and the seq of its
        last event (0: none). None, and nothing held, when the session is unknown, someone
        else's or held by another live node (`get` and `acquire` say which)."""
        row = self._take(_ACQUIRE_OWNED, session_id, owner_key=owner_key, principal=principal)
        return None if row is None else (self._record(row[:-1]), row[-1])

    def _take(self, statement: str, session_id: str, **params: Any) -> tuple[Any, ...] | None:
        """Run one of the `_acquire_sql` statements: the row it returned, the session now
        held here (counted), or None when it did not take it."""
        self._ensure_presence()
        params.update(sid=session_id, me=self.key, name=self.name)
        with self._conn() as conn:
            row: tuple[Any, ...] | None = conn.execute(statement, params, prepare=True).fetchone()
        if row is not None:
            with self._lock:
                self._held[session_id] = self._held.get(session_id, 0) + 1
        return row

    def release(self, session_id: str) -> None:
        """Undo one `acquire`; the last one lets other processes take the session."""
        with self._lock:
            count = self._held.get(session_id, 0) - 1
            if count > 0:
                self._held[session_id] = count
                return
            if self._held.pop(session_id, None) is None:
                return
        with self._conn() as conn:
            conn.execute(
                "UPDATE acpstack_sessions SET owner = NULL, owner_name = NULL "
                "WHERE session_id = %s AND owner = %s",
                (session_id, self.key),
            )

    def holder(self, session_id: str) -> str | None:
        """Which node has the session live (host:pid), or None: for people and tests."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT owner_name FROM acpstack_sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        """Let go of every session this node holds, then close the connections."""
        with self._lock:
            pool, self._pool = self._pool, None
            presence, self._presence = self._presence, None
            self._held.clear()
        if pool is None:
            return
        try:
            with pool.connection() as conn:
                conn.execute(
                    "UPDATE acpstack_sessions SET owner = NULL, owner_name = NULL WHERE owner = %s",
                    (self.key,),
                )
        except self._psycopg.Error as exc:  # the sessions free up when presence ends anyway
            logger.warning("session store: could not release this node's sessions: %s", exc)
        finally:
            pool.close()
            if presence is not None:
                presence.close()
        logger.debug("closed session store (node %s)", self.name)

    def __repr__(self) -> str:
        state = "closed" if self._pool is None else "open"
        return f"<PostgresSessionStore node {self.name} ({state})>"
