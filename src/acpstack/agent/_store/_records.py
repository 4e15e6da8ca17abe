"""What a session store keeps (`SessionRecord`, `StoredEvent`) and what it must do (`SessionStore`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, Self, TypedDict, Unpack, runtime_checkable

_APP_NAME = "acpstack"
_DB_FILENAME = "sessions.sqlite3"
EVENT_BATCH = 256  # events read per batch while iterating (no lock held in between)
ArchiveFilter = Literal["exclude", "include", "only"]
ARCHIVE_FILTERS = ("exclude", "include", "only")


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
    archived: bool = False  # archived sessions leave `list_sessions` unless asked for
    created_at: str = ""  # ISO 8601 UTC with "Z"; set by the store on create if empty
    updated_at: str = ""  # ISO 8601 UTC; bumped on every change and every appended event
    meta: dict[str, Any] = field(default_factory=dict)


class SessionChanges(TypedDict, total=False):
    """What `SessionStore.update` may change (every field but `session_id` and
    `created_at`); a field left out keeps its value. `updated_at` is bumped unless given."""

    cwd: str
    additional_directories: Sequence[str]
    mcp_servers: Sequence[Any]  # JSON-able
    mode_id: str | None
    config_values: Mapping[str, Any]  # JSON-able
    title: str | None
    archived: bool
    updated_at: str  # ISO 8601, any offset: stored in UTC with "Z"
    meta: Mapping[str, Any]  # JSON-able


NewEvent = tuple[str, str, bytes]
"""An event to append: (session_id, kind, payload)."""


@dataclass(slots=True)
class StoredEvent:
    """One recorded event. ``seq`` runs 1, 2, 3, ... per session, without gaps."""

    seq: int
    kind: str
    payload: bytes
    created_at: str


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

    def update(self, session_id: str, **changes: Unpack[SessionChanges]) -> SessionRecord:
        """Change the fields given (see `SessionChanges`) and bump updated_at.

        Raises KeyError for an unknown session, TypeError for an unknown field.
        """
        ...

    def append_event(self, session_id: str, kind: str, payload: bytes) -> int:
        """Durably append one event (one transaction) and return its seq.

        Also bumps updated_at. Raises KeyError for an unknown session.
        """
        ...

    def append_events(self, events: Sequence[NewEvent]) -> list[int | Exception]:
        """Append several events, of any sessions, in one transaction (a group commit);
        for each, its seq or the exception that refused it alone (KeyError for an unknown
        session, `SessionBusy`). An exception raised instead (the store is down, the disk
        is full) means that nothing was stored.

        The default appends one at a time; the stores of acpstack do it in one transaction.
        """
        results: list[int | Exception] = []
        for session_id, kind, payload in events:
            try:
                results.append(self.append_event(session_id, kind, payload))
            except (KeyError, SessionBusy) as exc:
                results.append(exc)
        return results

    def events(self, session_id: str, after_seq: int = 0) -> Iterator[StoredEvent]:
        """Events with seq > after_seq, in order. Unknown session: nothing."""
        ...

    def list_sessions(
        self,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        archived: ArchiveFilter = "exclude",
    ) -> tuple[list[SessionRecord], str | None]:
        """One page of sessions, newest first; returns (page, next cursor or None).
        `archived`: leave archived sessions out ("exclude"), add them ("include"), or list
        only them ("only")."""
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
        additional_directories: list[str] | None = None,
    ) -> SessionRecord:
        """Copy a session (record and full event history) under a new id.

        Raises KeyError for an unknown source, ValueError if new_id already exists.
        """
        ...

    def close(self) -> None:
        """Release resources. Idempotent."""
        ...


class StoreUnavailable(RuntimeError):
    """The session store could not take or give data now (disk full, file locked, database
    down or failing over). Retryable: nothing acknowledged before is lost, and the store
    is tried again on the next write."""

    def __init__(self, cause: BaseException | str) -> None:
        super().__init__(f"the session store is unavailable: {cause}")
        self.cause = cause


class SessionBusy(RuntimeError):
    """The session is live on another node (process) of a shared store.

    Raised by `SessionLeases.acquire` while another node holds the session, and by a write
    to a session that another node holds (or took over from this one).
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id} is live on another node")
        self.session_id = session_id


@runtime_checkable
class SessionLeases(Protocol):
    """A store shared by several processes that keeps each session live on one of them.

    The runtime acquires a session before it makes it live (new, load, resume, fork) and
    releases it when the session stops (close, delete, the client leaving). While one
    process holds a session, the others can neither acquire it nor write to it.
    """

    def acquire(self, session_id: str) -> None:
        """Make this process the session's only writer. Counted: each acquire needs a release.

        Raises `SessionBusy` while another live process holds it, KeyError for an unknown
        session.
        """
        ...

    def release(self, session_id: str) -> None:
        """Undo one `acquire`; the last one lets other processes take the session."""
        ...


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


class ClosingStore:
    """`with store:` closes it (shared by the stores that come with acpstack)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
