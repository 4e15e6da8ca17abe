"""Persistent session storage for ACP agents.

The agent runtime records everything it needs to rebuild a session -- the session's
settings (`SessionRecord`) and the ordered stream of events it produced (every
`session/update` it sent, every user prompt, ...) -- and replays the events on
`session/load`. Events are opaque here: a `kind` string plus a payload that the caller
has already encoded to bytes. Nothing in this module knows about protocol types;
records hold plain, JSON-able Python data.

Three implementations share one set of semantics:

* `SqliteSessionStore` -- a single SQLite file (WAL mode), safe to share between
  threads and between processes.
* `PostgresSessionStore` -- PostgreSQL (the `postgres` extra), shared by several
  processes on several machines; it also keeps each session live on one process at a
  time (`SessionLeases`).
* `MemorySessionStore` -- the same behaviour in memory, for tests and ephemeral agents.

`open_store` picks one from where it lives: a ``postgresql://`` URL or an SQLite path.

Timestamps are ISO 8601 UTC strings with microseconds and a trailing "Z"
(``2025-01-31T12:00:00.123456Z``). They are always written in that fixed-width form, so
string order is time order. A session's ``updated_at`` is strictly increasing: a bump is
``max(now, previous + 1 microsecond)``, so it never goes backwards even if the wall clock does.

The store is synchronous; the runtime never calls it on the event loop: its appends go
through one group-committing writer per process (`acpstack.agent._writer`), which commits
the waiting events of every session in one transaction (`append_events`) on a thread of
the store's own, and every other call runs on that thread too. A store that never waits
(`blocking = False`, such as `MemorySessionStore`) is called inline.
"""

from acpstack.agent._store._memory import MemorySessionStore
from acpstack.agent._store._open import is_postgres_url, open_store
from acpstack.agent._store._postgres import PostgresSessionStore
from acpstack.agent._store._records import (
    ARCHIVE_FILTERS,
    ArchiveFilter,
    NewEvent,
    SessionBusy,
    SessionChanges,
    SessionLeases,
    SessionRecord,
    SessionStore,
    StoredEvent,
    StoreUnavailable,
    default_store_path,
)
from acpstack.agent._store._sqlite import SCHEMA_VERSION, SqliteSessionStore

__all__ = [
    "ARCHIVE_FILTERS",
    "SCHEMA_VERSION",
    "ArchiveFilter",
    "MemorySessionStore",
    "PostgresSessionStore",
    "SessionBusy",
    "SessionChanges",
    "SessionLeases",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoreUnavailable",
    "StoredEvent",
    "NewEvent",
    "default_store_path",
    "is_postgres_url",
    "open_store",
]
