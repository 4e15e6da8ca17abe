"""The PostgreSQL store's schema, created and migrated by the store itself.

`migrate` runs in one transaction that first takes a transaction-level advisory lock, so
processes that start at once against a new or an old database wait for each other and
the schema is upgraded once; DDL is transactional in PostgreSQL, so an upgrade that fails
leaves the database as it was. The version lives in `acpstack_schema`.

Tables carry an `acpstack_` prefix (the database may hold other things). Text that is
compared or sorted uses the "C" collation, so the order is the same as SQLite's and
Python's whatever the database's locale.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("acpstack.agent.store")

SCHEMA_VERSION = 2
# The advisory lock that serialises migrations ("acpstack" as a number).
MIGRATION_LOCK = int.from_bytes(b"acpstack", "big") & (2**63 - 1)


def _migrate_0_to_1(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """
        CREATE TABLE acpstack_sessions (
            session_id             text COLLATE "C" PRIMARY KEY,
            cwd                    text COLLATE "C" NOT NULL,
            additional_directories text NOT NULL,  -- JSON array
            mcp_servers            text NOT NULL,  -- JSON array
            mode_id                text,
            config_values          text NOT NULL,  -- JSON object
            title                  text,
            created_at             timestamptz NOT NULL,
            updated_at             timestamptz NOT NULL,
            meta                   text NOT NULL,  -- JSON object
            archived               boolean NOT NULL DEFAULT false,
            last_seq               bigint NOT NULL DEFAULT 0,
            owner                  bigint,         -- the node that has the session live
            owner_name             text            -- that node for people: host and pid
        )
        """
    )
    conn.execute(
        "CREATE INDEX acpstack_sessions_by_updated "
        "ON acpstack_sessions (updated_at DESC, session_id DESC)"
    )
    conn.execute(
        "CREATE INDEX acpstack_sessions_by_cwd_updated "
        "ON acpstack_sessions (cwd, updated_at DESC, session_id DESC)"
    )
    conn.execute("CREATE INDEX acpstack_sessions_by_owner ON acpstack_sessions (owner)")
    conn.execute(
        """
        CREATE TABLE acpstack_events (
            session_id text COLLATE "C" NOT NULL
                REFERENCES acpstack_sessions (session_id) ON DELETE CASCADE,
            seq        bigint NOT NULL,
            kind       text NOT NULL,
            payload    bytea NOT NULL,
            created_at timestamptz NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """
    )


def _migrate_1_to_2(conn: psycopg.Connection[Any]) -> None:
    # A row may hold a run of a session's events (see `_paging.RUN_KIND`): `n` is how many,
    # `seq` the run's last; every row of an older database is a run of one.
    conn.execute("ALTER TABLE acpstack_events ADD COLUMN n integer NOT NULL DEFAULT 1")


# MIGRATIONS[v] upgrades the schema from version v to v + 1.
MIGRATIONS: dict[int, Callable[[psycopg.Connection[Any]], None]] = {
    0: _migrate_0_to_1,
    1: _migrate_1_to_2,
}


def migrate(conn: psycopg.Connection[Any]) -> None:
    """Bring the schema to SCHEMA_VERSION, all or nothing (see the module docstring)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS acpstack_schema ("
            "one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL)"
        )
        row = conn.execute("SELECT version FROM acpstack_schema").fetchone()
        version: int = 0 if row is None else row[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"session store schema version {version} is newer than this acpstack "
                f"understands ({SCHEMA_VERSION}); upgrade acpstack"
            )
        if version == SCHEMA_VERSION:
            return
        while version < SCHEMA_VERSION:
            log.info("migrating session store schema %d -> %d", version, version + 1)
            MIGRATIONS[version](conn)
            version += 1
        conn.execute(
            "INSERT INTO acpstack_schema (one, version) VALUES (true, %s) "
            "ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version",
            (version,),
        )
