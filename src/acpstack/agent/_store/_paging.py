"""Paging that every store shares: which sessions `list_sessions` keeps, where a page ends
and the cursor of the next, and a history read in batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import msgspec

from acpstack.agent._store._records import EVENT_BATCH, ArchiveFilter, SessionRecord, StoredEvent
from acpstack.agent._store._rows import decode_cursor, encode_cursor

Row = TypeVar("Row")
EventRow = tuple[int, str, bytes | memoryview, str]  # seq, kind, payload, created_at


def wanted_archived(archived: ArchiveFilter) -> bool | None:
    """The `archived` flag a listed session must have, or None when either will do."""
    return None if archived == "include" else archived == "only"


def list_query(
    select: str,
    cwd: str | None,
    cursor: str | None,
    limit: int,
    archived: ArchiveFilter,
    *,
    mark: str,
    timestamp: str = "",
) -> tuple[str, list[Any]]:
    """The SQL and parameters of one `list_sessions` page: `select` (the columns and the
    table) filtered, newest first, one row over `limit` to tell whether a next page exists.

    `mark` is the driver's placeholder; `timestamp` is appended to the cursor's time
    placeholder (a cast, where the column is not text).
    """
    where: list[str] = []
    params: list[Any] = []
    flag = wanted_archived(archived)
    if flag is not None:
        where.append(f"archived = {mark}")
        params.append(flag)
    if cwd is not None:
        where.append(f"cwd = {mark}")
        params.append(cwd)
    if cursor is not None:
        after_updated, after_id = decode_cursor(cursor)
        where.append(f"(updated_at, session_id) < ({mark}{timestamp}, {mark})")
        params += [after_updated, after_id]
    sql = select
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY updated_at DESC, session_id DESC LIMIT {mark}"
    params.append(limit + 1)
    return sql, params


def cut_page(
    rows: Sequence[Row], limit: int, to_record: Callable[[Row], SessionRecord]
) -> tuple[list[SessionRecord], str | None]:
    """The first `limit` of `rows` (newest first) as records, and the cursor of the next
    page (None when `rows` has no more)."""
    page = [to_record(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        next_cursor = encode_cursor(page[-1].updated_at, page[-1].session_id)
    return page, next_cursor


def events_in_batches(
    fetch: Callable[[int], Sequence[EventRow]], after_seq: int
) -> Iterator[StoredEvent]:
    """Events after `after_seq`, in order: `fetch(last)` gives up to `EVENT_BATCH` rows with
    seq > last. Each batch is its own short read, so nothing is held while the caller
    consumes events (payloads come back as bytes)."""
    last = after_seq
    while True:
        rows = fetch(last)
        for seq, kind, payload, created_at in rows:
            yield StoredEvent(seq, kind, bytes(payload), created_at)
        if len(rows) < EVENT_BATCH:
            return
        last = rows[-1][0]


# A row of the events table may hold a run of a session's consecutive events (one row per
# session and batch: one insert into the table and its index per batch, not per event).
# Its `seq` is the run's last seq and `n` how many events it holds; a run of one keeps
# its kind and payload as they are, a longer one has the kind `RUN_KIND` (no event has
# it) and its events as a msgpack array of [kind, payload] pairs.
RUN_KIND = ""
pack_run: Callable[[list[tuple[str, bytes]]], bytes] = msgspec.msgpack.Encoder().encode
_unpack_run = msgspec.msgpack.Decoder(list[tuple[str, bytes]]).decode


def unpack_runs(rows: Sequence[Sequence[Any]], after_seq: int) -> list[EventRow]:
    """Rows (seq, kind, payload, created_at, n) of runs, keyed by their last seq, as one
    row per event with seq > `after_seq` (the first run may begin at or before it)."""
    out: list[EventRow] = []
    for last, kind, payload, created_at, n in rows:
        if n == 1:
            out.append((last, kind, payload, created_at))
            continue
        first = last - n + 1
        for offset, (event_kind, data) in enumerate(_unpack_run(payload)):
            if first + offset > after_seq:
                out.append((first + offset, event_kind, data, created_at))
    return out
