"""`open_store`: a store from where it lives (a PostgreSQL URL or an SQLite file)."""

from __future__ import annotations

import os

from acpstack.agent._store._records import SessionStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: object) -> bool:
    return isinstance(location, str) and location.lower().startswith(POSTGRES_SCHEMES)


def open_store(location: str | os.PathLike[str] | None = None) -> SessionStore:
    """`PostgresSessionStore` for a ``postgresql://`` (or ``postgres://``) URL, else
    `SqliteSessionStore` at that path (None: the default path)."""
    if is_postgres_url(location):
        from acpstack.agent._store._postgres import PostgresSessionStore

        return PostgresSessionStore(str(location))
    from acpstack.agent._store._sqlite import SqliteSessionStore

    return SqliteSessionStore(location)
