"""What one stored event costs: `python -m benchmarks.store_append [--events 5000]`.

The session store is synchronous and the runtime calls it from the event loop, so an
append's latency is time the loop is blocked. This measures appends of a 100-byte event,
one after another, for SQLite (WAL, synchronous=NORMAL), and for PostgreSQL through
acpstack's store (psycopg 3, one statement per event) with and without waiting for the
disk at each commit; and, for comparison, the same statement through asyncpg (when it is
installed) one at a time and 16 at once. PostgreSQL is a throwaway server started here
(tools/cluster), on a unix socket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acpstack.agent import PostgresSessionStore, SessionRecord, SqliteSessionStore
from acpstack.agent._store._postgres import _APPEND
from tools.cluster._postgres import LocalPostgres

PAYLOAD = b"x" * 100


def per_second(store: Any, events: int) -> float:
    store.create(SessionRecord(f"bench-{time.monotonic_ns()}", "/tmp"))
    sid = store.list_sessions(limit=1)[0][0].session_id
    started = time.perf_counter()
    for _ in range(events):
        store.append_event(sid, "update", PAYLOAD)
    return events / (time.perf_counter() - started)


async def asyncpg_per_second(url: str, events: int, at_once: int) -> float | None:
    try:
        import asyncpg
    except ImportError:
        return None
    sql = _APPEND
    for index, name in enumerate(["now", "sid", "me", "held", "kind", "payload"], 1):
        sql = sql.replace(f"%({name})s", f"${index}")
    pool = await asyncpg.create_pool(
        url, min_size=at_once, max_size=at_once, server_settings={"synchronous_commit": "off"}
    )
    sids = [f"apg-{at_once}-{i}" for i in range(at_once)]
    for sid in sids:
        await pool.execute(
            "INSERT INTO acpstack_sessions (session_id, cwd, additional_directories, "
            "mcp_servers, config_values, created_at, updated_at, meta) "
            "VALUES ($1, '/tmp', '[]', '[]', '{}', now(), now(), '{}')",
            sid,
        )

    async def one(sid: str) -> None:
        for _ in range(events // at_once):
            await pool.fetchval(sql, datetime.now(UTC), sid, 0, False, "update", PAYLOAD)

    started = time.perf_counter()
    await asyncio.gather(*(one(sid) for sid in sids))
    seconds = time.perf_counter() - started
    await pool.close()
    return events / seconds


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store_append")
    parser.add_argument("--events", type=int, default=5000)
    args = parser.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with SqliteSessionStore(Path(tmp) / "s.sqlite3") as sqlite:
            out["sqlite"] = per_second(sqlite, args.events)
    with LocalPostgres() as pg:
        url = pg.create_database("bench")
        with PostgresSessionStore(url) as store:
            out["postgres (synchronous_commit off, the default)"] = per_second(store, args.events)
        durable = f"{url}&options=-csynchronous_commit%3Don"
        with PostgresSessionStore(durable) as store:
            out["postgres (synchronous_commit on)"] = per_second(store, args.events // 5)
        for at_once in (1, 16):
            rate = asyncio.run(asyncpg_per_second(url, args.events, at_once))
            if rate is not None:
                out[f"asyncpg, {at_once} at once (synchronous_commit off)"] = rate
    for name, rate in out.items():
        out[name] = {"events_per_s": round(rate), "us_per_event": round(1e6 / rate, 1)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
