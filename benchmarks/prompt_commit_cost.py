"""Where SQLite's share of a prompt round trip goes: `python -m benchmarks.prompt_commit_cost
[--events 2000] [--no-pin]`.

A `SessionAgent` stores each prompt (one `user_message_chunk` event) before it answers
(W10, `benchmarks.persisted_round_trip`): the event is queued for the store's writer
thread, which commits it as a batch of one, and the turn's `flush` waits for that batch.
This measures the steps of that wait one by one, in one process on uvloop (as the agent
runs), on a real SQLite file (WAL, synchronous=NORMAL, as the store opens it), each
repeated `--events` times, medians (and p99) in µs:

- the statements of one commit, on the loop's thread: BEGIN IMMEDIATE, the session's last
  seq, the INSERT, the UPDATE of `updated_at`, COMMIT (the same statements as
  `SqliteSessionStore.append_events` for one event, run on the store's own connection);
- `append_events` of one event, on the loop's thread: wall and CPU time;
- an empty hand-off to a one-thread executor and back (`run_in_executor` of a no-op): what
  the writer thread's round trip costs without the store;
- the writer's path: `StoreWriter.append` and the wait for its batch (the hand-off, the
  commit, the loop's wake-up);
- the same with `MemorySessionStore` (called inline, no thread).

By default the process is pinned to CPU 0 with `taskset`, as W10's agent is (its writer
thread then shares that CPU with the loop and with the client); `--no-pin` lets it use
both cores.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop

from acpstack.agent import MemorySessionStore, SessionRecord, SqliteSessionStore
from acpstack.agent._store._sqlite import _LAST_SEQ
from acpstack.agent._writer import StoreWriter

PAYLOAD = b'{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"noop"}}'


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered):8.1f} {p99:8.1f}"


def statements(store: SqliteSessionStore, sid: str, events: int) -> dict[str, list[float]]:
    """Each statement of a one-event commit, timed apart (µs)."""
    conn = store._connection()
    steps: dict[str, list[float]] = {}
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000+00:00", time.gmtime())

    def timed(name: str, sql: str, params: object = ()) -> object:
        t0 = time.perf_counter()
        result = conn.execute(sql, params).fetchone()  # type: ignore[arg-type]
        steps.setdefault(name, []).append((time.perf_counter() - t0) * 1e6)
        return result

    with store._lock:
        for _ in range(events):
            timed("BEGIN IMMEDIATE", "BEGIN IMMEDIATE")
            found = timed("SELECT last seq", _LAST_SEQ, {"sid": sid})
            assert isinstance(found, tuple)
            timed(
                "INSERT the event",
                "INSERT INTO events (session_id, seq, kind, payload, created_at, n) "
                "VALUES (?, ?, ?, ?, ?, 1)",
                (sid, found[1] + 1, "prompt", PAYLOAD, now),
            )
            timed(
                "UPDATE updated_at",
                "UPDATE sessions SET updated_at = ? WHERE session_id = ?",
                (now, sid),
            )
            timed("COMMIT", "COMMIT")
    return steps


def on_this_thread(store: SqliteSessionStore, sid: str, events: int) -> tuple[list[float], ...]:
    """`append_events` of one event on the calling thread: wall and thread CPU (µs)."""
    wall, cpu = [], []
    batch = [(sid, "prompt", PAYLOAD)]
    for _ in range(events):
        c0, t0 = time.thread_time(), time.perf_counter()
        store.append_events(batch)
        wall.append((time.perf_counter() - t0) * 1e6)
        cpu.append((time.thread_time() - c0) * 1e6)
    return wall, cpu


async def timed_awaits(events: int, step: Callable[[], Awaitable[object]]) -> list[float]:
    out = []
    for _ in range(events):
        t0 = time.perf_counter()
        await step()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


async def on_the_loop(path: Path, events: int) -> dict[str, list[float]]:
    loop = asyncio.get_running_loop()
    results: dict[str, list[float]] = {}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        results["empty hand-off to a thread and back"] = await timed_awaits(
            events, lambda: loop.run_in_executor(pool, lambda: None)
        )
    for name, store in (
        ("writer, SQLite: append + wait for the batch", SqliteSessionStore(path)),
        ("writer, memory (inline): append", MemorySessionStore()),
    ):
        sid = f"writer-{name[8:14]}"
        store.create(SessionRecord(sid, "/tmp"))
        writer = StoreWriter(store)

        async def append_and_wait(writer: StoreWriter = writer, sid: str = sid) -> None:
            ticket = writer.append(sid, "prompt", PAYLOAD)
            await ticket.batch.wait()
            assert not isinstance(ticket.result, Exception), ticket.result

        results[name] = await timed_awaits(events, append_and_wait)
        writer.close()
        store.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prompt_commit_cost")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to CPU 0")
    args = parser.parse_args()
    if not args.no_pin and shutil.which("taskset") and os.environ.get("_PINNED") != "1":
        argv = ["taskset", "-c", "0", sys.executable, "-m", "benchmarks.prompt_commit_cost"]
        os.execvpe(argv[0], [*argv, *sys.argv[1:]], {**os.environ, "_PINNED": "1"})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cost.sqlite3"
        store = SqliteSessionStore(path)
        store.create(SessionRecord("s", "/tmp"))
        store.append_events([("s", "prompt", PAYLOAD)] * 100)  # a warm file and cache
        steps = statements(store, "s", args.events)
        wall, cpu = on_this_thread(store, "s", args.events)
        store.close()
        on_loop = uvloop.run(on_the_loop(path, args.events))
    pinned = "CPU 0" if os.environ.get("_PINNED") == "1" else "not pinned"
    print(f"{args.events} one-event commits, SQLite (WAL, synchronous=NORMAL), {pinned}, ", end="")
    print(f"load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'step':<48} {'p50 µs':>8} {'p99 µs':>8}")
    for name, samples in steps.items():
        print(f"  {name:<46} {summary(samples)}")
    total = [sum(parts) for parts in zip(*steps.values(), strict=True)]
    print(f"  {'(the five statements)':<46} {summary(total)}")
    print(f"{'append_events, this thread: wall':<48} {summary(wall)}")
    print(f"{'append_events, this thread: CPU':<48} {summary(cpu)}")
    for name, samples in on_loop.items():
        print(f"{name:<48} {summary(samples)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
