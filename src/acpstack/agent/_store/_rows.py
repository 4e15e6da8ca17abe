"""The stored form of a record, and the rules both stores share.

A record is stored as a `StoredRow`: its containers as JSON text (msgspec), so that every
store accepts and returns exactly the same data (tuples come back as lists, integer keys
as strings). Validation, timestamps and list cursors live here too.

Timestamps are ISO 8601 UTC strings with microseconds and a trailing "Z", always in that
fixed-width form, so string order is time order. A session's ``updated_at`` is strictly
increasing: a bump is ``max(now, previous + 1 microsecond)``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import msgspec

from acpstack.agent._store._records import ARCHIVE_FILTERS, SessionRecord

_CURSOR_VERSION = 1
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


# Fields `update()` accepts (everything but the identity and the creation time).
_UPDATABLE = frozenset(f.name for f in dataclasses.fields(SessionRecord)) - {
    "session_id",
    "created_at",
}


_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_ONE_US = timedelta(microseconds=1)


def _format_ts(dt: datetime) -> str:
    if dt.tzinfo is not UTC:
        dt = dt.astimezone(UTC)
    # The fixed-width form of _TS_FORMAT, without strftime (a hot path: every event).
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:"
        f"{dt.second:02d}.{dt.microsecond:06d}Z"
    )


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


_clock_second = -1
_clock_prefix = ""


def now_text() -> str:
    """Now in the fixed-width form, cheaply (every appended event needs one): the
    date-and-seconds part is formatted once a second."""
    global _clock_second, _clock_prefix
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    if second != _clock_second:
        _clock_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _clock_second = second
    return f"{_clock_prefix}.{micro:06d}Z"


def text_of(micros: int) -> str:
    """The fixed-width text of a time in microseconds since the epoch."""
    global _clock_second, _clock_prefix
    second, micro = divmod(micros, 1_000_000)
    if second != _clock_second:
        _clock_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _clock_second = second
    return f"{_clock_prefix}.{micro:06d}Z"


def micros_of(text: str) -> int:
    """The inverse of `text_of`."""
    dt = _parse_ts(text, "timestamp")
    return (int(dt.timestamp()) * 1_000_000) + dt.microsecond


def bump(previous: str | None) -> str:
    """A new updated_at: now, but strictly after `previous` even if the clock stepped back
    (fixed-width texts compare as the times they say)."""
    now = now_text()
    if not previous or now > previous:
        return now
    try:
        return _format_ts(_parse_ts(previous, "updated_at") + _ONE_US)
    except (TypeError, ValueError):
        return now


def _json_dumps(value: Any) -> str:
    return _encode(value).decode()


def _json_loads(text: str | bytes) -> Any:
    return _decode(text)


def check_id(value: object, what: str = "session_id") -> str:
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
    elif name == "archived":
        if not isinstance(value, bool):
            raise TypeError(f"archived must be a bool, got {type(value).__name__}")
    elif name in ("config_values", "meta"):
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    elif name in ("created_at", "updated_at"):
        return _normalize_ts(value, name)
    return value


class StoredRow(NamedTuple):
    """A record as both stores keep it: containers as JSON text."""

    session_id: str
    cwd: str
    additional_directories: str
    mcp_servers: str
    mode_id: str | None
    config_values: str
    title: str | None
    created_at: str
    updated_at: str
    meta: str
    archived: int  # 0 or 1 (SQLite has no boolean)


ROW_COLUMNS = ", ".join(StoredRow._fields)


def to_row(r: SessionRecord) -> StoredRow:
    return StoredRow(
        r.session_id,
        r.cwd,
        _json_dumps(list(r.additional_directories)),
        _json_dumps(list(r.mcp_servers)),
        r.mode_id,
        _json_dumps(dict(r.config_values)),
        r.title,
        r.created_at,
        r.updated_at,
        _json_dumps(dict(r.meta)),
        1 if r.archived else 0,
    )


def from_row(row: StoredRow) -> SessionRecord:
    return SessionRecord(
        session_id=row.session_id,
        cwd=row.cwd,
        additional_directories=_json_loads(row.additional_directories),
        mcp_servers=_json_loads(row.mcp_servers),
        mode_id=row.mode_id,
        config_values=_json_loads(row.config_values),
        title=row.title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        meta=_json_loads(row.meta),
        archived=bool(row.archived),
    )


def prepare_new(record: SessionRecord) -> SessionRecord:
    """Validate a record for create(); fill in timestamps. Does not mutate the argument."""
    if not isinstance(record, SessionRecord):
        raise TypeError(f"expected a SessionRecord, got {type(record).__name__}")
    check_id(record.session_id)
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


def _check_updatable(changes: Mapping[str, Any]) -> None:
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise TypeError(
            f"cannot update {', '.join(sorted(unknown))}; updatable fields: "
            f"{', '.join(sorted(_UPDATABLE))}"
        )


def apply_changes(current: SessionRecord, changes: Mapping[str, Any]) -> SessionRecord:
    """A copy of `current` with validated `changes`; updated_at bumped unless given."""
    _check_updatable(changes)
    new = copy.copy(current)
    for name, value in changes.items():
        setattr(new, name, _check_field(name, value))
    if "updated_at" not in changes:
        new.updated_at = bump(current.updated_at)
    return new


def stored_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """`update()` changes validated and in stored form (containers as JSON text), for a
    store that applies them in one statement without reading the record first."""
    _check_updatable(changes)
    stored: dict[str, Any] = {}
    for name, value in changes.items():
        value = _check_field(name, value)
        if name in ("additional_directories", "mcp_servers"):
            value = _json_dumps(list(value))
        elif name in ("config_values", "meta"):
            value = _json_dumps(dict(value))
        stored[name] = value
    return stored


def encode_cursor(updated_at: str, session_id: str) -> str:
    raw = _encode([_CURSOR_VERSION, updated_at, session_id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """Inverse of `_encode_cursor`; ValueError with a clear message for anything else."""
    if not isinstance(cursor, str) or not cursor:
        raise ValueError("invalid session list cursor: expected a non-empty string")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = _decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise ValueError(
            f"invalid session list cursor {cursor[:64]!r}: not a cursor returned by list_sessions()"
        ) from None
    if (
        not isinstance(data, list)
        or len(data) != 3
        or data[0] != _CURSOR_VERSION
        or not isinstance(data[1], str)
        or not isinstance(data[2], str)
    ):
        raise ValueError(
            f"invalid session list cursor {cursor[:64]!r}: not a cursor returned by list_sessions()"
        )
    return data[1], data[2]


def check_list_args(cwd: str | None, limit: int, archived: str = "exclude") -> None:
    if cwd is not None and not isinstance(cwd, str):
        raise TypeError("cwd must be a str or None")
    if archived not in ARCHIVE_FILTERS:
        raise ValueError(f"archived must be one of {', '.join(ARCHIVE_FILTERS)}, got {archived!r}")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")


def check_event_args(kind: str, payload: bytes) -> bytes:
    if not isinstance(kind, str) or not kind:
        raise TypeError("kind must be a non-empty str")
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
    return bytes(payload)


def check_after_seq(after_seq: int) -> None:
    if not isinstance(after_seq, int) or isinstance(after_seq, bool) or after_seq < 0:
        raise ValueError(f"after_seq must be an int >= 0, got {after_seq!r}")


def fork_record(
    source: SessionRecord,
    new_id: str,
    cwd: str | None,
    additional_directories: list[str] | None,
) -> SessionRecord:
    new = copy.copy(source)
    new.session_id = new_id
    if cwd is not None:
        new.cwd = _check_field("cwd", cwd)
    if additional_directories is not None:
        new.additional_directories = _check_field("additional_directories", additional_directories)
    new.created_at = new.updated_at = _format_ts(_utcnow())
    new.archived = False  # a fork is a new, live session
    return new
