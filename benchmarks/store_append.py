"""What a stored event costs: `python -m benchmarks.store_append [--events 5000]`.

A `SessionAgent` hands its events to the store's writer thread, which commits them in
batches (`agent/_writer.py`): what a busy turn pays per event is the batched figure; a
single append is what one event alone costs (a quiet session, `append_event`). Measured
with 100-byte events, for SQLite (WAL, synchronous=NORMAL) and for PostgreSQL through
acpstack's store (psycopg 3) with its default (`synchronous_commit=on`: each commit waits
for the disk) and with `synchronous_commit=off`; batches are BATCH events of one session
in one `append_events` call (one transaction, one row). For comparison, the single-event
statement through asyncpg (when it is installed), one at a time and 16 at once.
PostgreSQL is a throwaway server started here (tools/cluster), on a unix socket.
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
BATCH = 64


def _new_session(store: Any) -> str:
    sid = f"bench-{time.monotonic_ns()}"
    store.create(SessionRecord(sid, "/tmp"))
    return sid


def per_second(store: Any, events: int) -> float:
    """Events/s appended one at a time, each its own transaction."""
    sid = _new_session(store)
    started = time.perf_counter()
    for _ in range(events):
        store.append_event(sid, "update", PAYLOAD)
    return events / (time.perf_counter() - started)


def batched_per_second(store: Any, events: int) -> float:
    """Events/s appended BATCH at a time (one session's), as the writer thread does."""
    sid = _new_session(store)
    batch = [(sid, "update", PAYLOAD)] * BATCH
    rounds = max(1, events // BATCH)
    started = time.perf_counter()
    for _ in range(rounds):
        results = store.append_events(batch)
        assert not any(isinstance(r, Exception) for r in results), results
    return rounds * BATCH / (time.perf_counter() - started)


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
            out["sqlite, one at a time"] = per_second(sqlite, args.events)
            out[f"sqlite, {BATCH} per batch"] = batched_per_second(sqlite, args.events * 4)
    with LocalPostgres() as pg:
        url = pg.create_database("bench")
        with PostgresSessionStore(url) as store:
            on = "synchronous_commit on, the default"
            out[f"postgres ({on}), one at a time"] = per_second(store, args.events // 10)
            out[f"postgres ({on}), {BATCH} per batch"] = batched_per_second(store, args.events)
        fast = f"{url}&options=-csynchronous_commit%3Doff"
        with PostgresSessionStore(fast) as store:
            off = "synchronous_commit off"
            out[f"postgres ({off}), one at a time"] = per_second(store, args.events)
            out[f"postgres ({off}), {BATCH} per batch"] = batched_per_second(store, args.events * 4)
        for at_once in (1, 16):
            rate = asyncio.run(asyncpg_per_second(url, args.events, at_once))
            if rate is not None:
                out[f"asyncpg, one event per statement, {at_once} at once ({off})"] = rate
    for name, rate in out.items():
        out[name] = {"events_per_s": round(rate), "us_per_event": round(1e6 / rate, 1)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
