"""`MemorySessionStore`: the same semantics as SQLite, in memory (tests, ephemeral agents)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Unpack

from acpstack.agent._store._paging import (
    EventRow,
    cut_page,
    events_in_batches,
    wanted_archived,
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
)
from acpstack.agent._store._rows import (
    StoredRow,
    apply_changes,
    check_after_seq,
    check_event_args,
    check_id,
    check_list_args,
    decode_cursor,
    fork_record,
    from_row,
    micros_of,
    prepare_new,
    text_of,
    to_row,
)


class MemorySessionStore(ClosingStore, SessionStore):
    """A `SessionStore` kept in memory, with the same semantics as `SqliteSessionStore`.

    Records are kept in the same JSON-encoded form as in SQLite, so the same values are
    accepted and returned (e.g. tuples come back as lists) and callers never share
    mutable state with the store.
    """

    supports_list = True
    supports_delete = True
    supports_fork = True
    blocking = False  # nothing here waits for a disk or a server: called on the event loop

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._rows: dict[str, StoredRow] = {}
        # Each event: (seq, kind, payload, its time in microseconds).
        self._events: dict[str, list[tuple[int, str, bytes, int]]] = {}
        self._last: dict[str, int] = {}  # a session's newest event time, microseconds
        self._stale: set[str] = set()  # sessions whose row lags behind their events
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("session store is closed")

    def create(self, record: SessionRecord) -> SessionRecord:
        """Store a new session; the stored copy, timestamps filled in (ValueError if
        the id exists)."""
        new = prepare_new(record)
        row = to_row(new)
        with self._lock:
            self._check_open()
            if new.session_id in self._rows:
                raise ValueError(f"session {new.session_id!r} already exists")
            self._rows[new.session_id] = row
            self._events[new.session_id] = []
        return from_row(row)

    def get(self, session_id: str) -> SessionRecord | None:
        """A fresh copy of the session's record, or None if there is no such session."""
        with self._lock:
            self._check_open()
            row = self._row(session_id)
        return None if row is None else from_row(row)

    def update(self, session_id: str, **changes: Unpack[SessionChanges]) -> SessionRecord:
        """Change the record's fields and bump `updated_at`; the new record (KeyError
        for an unknown session, TypeError for a field that cannot change)."""
        with self._lock:
            self._check_open()
            row = self._row(session_id)
            if row is None:
                raise KeyError(session_id)
            new_row = to_row(apply_changes(from_row(row), changes))
            self._rows[session_id] = new_row
            self._last.pop(session_id, None)  # the next event comes after the new time
        return from_row(new_row)

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        """Append one event to the session's history; its `seq` (KeyError for an
        unknown session)."""
        if type(payload) is not bytes or type(kind) is not str or not kind:
            payload = check_event_args(kind, payload)
        now = time.time_ns() // 1000
        with self._lock:
            log = self._events.get(session_id)
            if log is None:
                self._check_open()  # (closing empties `_events`)
                raise KeyError(session_id)
            # A hot path (every update of a streaming turn): times are kept as integer
            # microseconds, made text when read; the row's updated_at catches up then.
            last = self._last.get(session_id)
            if last is None:
                last = micros_of(self._rows[session_id].updated_at)
            if now <= last:
                now = last + 1
            self._last[session_id] = now
            seq = len(log) + 1
            log.append((seq, kind, payload, now))
            self._stale.add(session_id)
            return seq

    def append_events(self, events: Sequence[NewEvent]) -> list[int | Exception]:
        """Append events of any sessions at once (see `SessionStore.append_events`)."""
        results: list[int | Exception] = []
        for sid, kind, payload in events:
            try:
                results.append(self.append_event(sid, kind, payload))
            except KeyError as exc:
                results.append(exc)
        return results

    def _row(self, session_id: str) -> StoredRow | None:
        """The session's row, with `updated_at` moved by the events appended since."""
        row = self._rows.get(session_id)
        if row is not None and session_id in self._stale:
            self._stale.discard(session_id)
            newest = text_of(self._last[session_id])
            if newest > row.updated_at:
                row = self._rows[session_id] = row._replace(updated_at=newest)
        return row

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        """The session's events with `seq` > `after_seq`, in order, read in batches
        (nothing for an unknown session)."""
        check_after_seq(after_seq)
        with self._lock:
            self._check_open()
        return self._iter_events(session_id, after_seq)

    def _iter_events(self, session_id: str, after_seq: int) -> Iterator[StoredEvent]:
        # Same contract as the SQLite store: batches taken under the lock, nothing held
        # while the caller consumes them. Each event comes back as a new StoredEvent (its
        # payload is immutable bytes), so callers cannot alter the stored history.
        def fetch(last: int) -> list[EventRow]:
            with self._lock:
                self._check_open()
                log = self._events.get(session_id)
                batch = [] if log is None else log[last : last + EVENT_BATCH]
            return [(seq, kind, data, text_of(at)) for seq, kind, data, at in batch]

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
        flag = wanted_archived(archived)
        after = decode_cursor(cursor) if cursor is not None else None
        with self._lock:
            self._check_open()
            for stale in list(self._stale):
                self._row(stale)
            rows = [
                r
                for r in self._rows.values()
                if (cwd is None or r.cwd == cwd)
                and (flag is None or bool(r.archived) == flag)
                and (after is None or (r.updated_at, r.session_id) < after)
            ]
        rows.sort(key=lambda r: (r.updated_at, r.session_id), reverse=True)
        return cut_page(rows, limit, from_row)

    def delete(self, session_id: str) -> None:
        """Remove the session and its events (an unknown session is a no-op)."""
        with self._lock:
            self._check_open()
            self._rows.pop(session_id, None)
            self._events.pop(session_id, None)
            self._last.pop(session_id, None)
            self._stale.discard(session_id)

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
        with self._lock:
            self._check_open()
            row = self._row(source_id)
            if row is None:
                raise KeyError(source_id)
            if new_id in self._rows:
                raise ValueError(f"session {new_id!r} already exists")
            new = fork_record(from_row(row), new_id, cwd, additional_directories)
            new_row = to_row(new)
            self._rows[new_id] = new_row
            self._events[new_id] = list(self._events[source_id])  # events immutable
        return from_row(new_row)

    def close(self) -> None:
        """Release the store; later calls raise RuntimeError. Idempotent."""
        with self._lock:
            self._closed = True
            self._rows.clear()
            self._events.clear()
            self._last.clear()
            self._stale.clear()
