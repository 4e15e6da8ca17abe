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
- the same with `MemorySessionStore` (called inline, no thread);
- W10's agent itself (`peers/acpstack_session_agent.py`, memory and SQLite) driven over a
  real pipe by a bare client in this process: wall time per prompt, and the CPU time each
  thread of the agent process spent per prompt (from /proc: the event loop's thread and
  the store's writer thread apart), its context switches per prompt, and this client's CPU.

By default the process is pinned to CPU 0 with `taskset`, as W10's agent is (its writer
thread then shares that CPU with the loop and with the client); `--no-pin` lets it use
both cores. Everything runs on the interpreter that runs this (the agent too), not on
the benchmark's own venv.
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

from acpstack import Client, spawn_agent
from acpstack.agent import MemorySessionStore, SessionRecord, SqliteSessionStore
from acpstack.agent._store._sqlite import _LAST_SEQ
from acpstack.agent._writer import StoreWriter
from acpstack.schema import v1 as acp

Timed = tuple[list[float], float]  # wall µs per step, and the loop thread's CPU µs per step
PEERS = Path(__file__).resolve().parent / "peers"
WARM_PROMPTS = 500
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


async def timed_on_loop(events: int, step: Callable[[], Awaitable[object]]) -> Timed:
    """Wall µs of each `step`, and the loop thread's mean CPU µs per step."""
    cpu = time.thread_time()
    walls = await timed_awaits(events, step)
    return walls, (time.thread_time() - cpu) * 1e6 / events


async def on_the_loop(path: Path, events: int) -> dict[str, Timed]:
    loop = asyncio.get_running_loop()
    results: dict[str, Timed] = {}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        results["empty hand-off to a thread and back"] = await timed_on_loop(
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

        results[name] = await timed_on_loop(events, append_and_wait)
        writer.close()
        store.close()
    return results


def threads(pid: int) -> dict[str, tuple[float, float, int]]:
    """(user CPU s, system CPU s, context switches) of each thread of process `pid`: the
    main thread (the event loop) as "loop", the others by thread id (their OS names are
    all the interpreter's)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        status = (task / "status").read_text()
        switches = sum(
            int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line
        )
        name = "loop" if task.name == str(pid) else f"thread {task.name}"
        out[name] = (int(fields[11]) / tick, int(fields[12]) / tick, switches)
    return out


async def agent_process(store: str, prompts: int) -> dict[str, float]:
    """W10's agent with `store` over a real pipe: µs and switches per prompt."""
    async with spawn_agent(
        [sys.executable, str(PEERS / "acpstack_session_agent.py"), store], Client()
    ) as conn:
        peer, pid = conn.agent, conn.transport.pid  # type: ignore[attr-defined]
        await peer.initialize(acp.InitializeRequest(protocol_version=1))
        sid = (await peer.session_new(acp.NewSessionRequest(cwd="/tmp", mcp_servers=[]))).session_id
        request = acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text="noop")])
        for _ in range(WARM_PROMPTS):
            await peer.session_prompt(request)
        before, own = threads(pid), time.process_time()
        walls = await timed_awaits(prompts, lambda: peer.session_prompt(request))
        after, own = threads(pid), time.process_time() - own
    ordered = sorted(walls)
    out = {
        "wall p50": ordered[len(ordered) // 2],
        "wall p99": ordered[int(len(ordered) * 0.99)],
        "client CPU": own * 1e6 / prompts,
    }
    for name, (user, system, switches) in after.items():
        user0, system0, switches0 = before.get(name, (0.0, 0.0, 0))
        if user + system - user0 - system0 > 0 or switches - switches0 > 0:
            out[f"{name}: user CPU"] = (user - user0) * 1e6 / prompts
            out[f"{name}: system CPU"] = (system - system0) * 1e6 / prompts
            out[f"{name}: context switches"] = (switches - switches0) / prompts
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prompt_commit_cost")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to CPU 0")
    args = parser.parse_args()
    if (
        not args.no_pin
        and shutil.which("taskset")
        and os.environ.get("ACPSTACK_BENCH_PINNED") != "1"
    ):
        argv = ["taskset", "-c", "0", sys.executable, "-m", "benchmarks.prompt_commit_cost"]
        os.execvpe(argv[0], [*argv, *sys.argv[1:]], {**os.environ, "ACPSTACK_BENCH_PINNED": "1"})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cost.sqlite3"
        store = SqliteSessionStore(path)
        store.create(SessionRecord("s", "/tmp"))
        store.append_events([("s", "prompt", PAYLOAD)] * 100)  # a warm file and cache
        steps = statements(store, "s", args.events)
        wall, cpu = on_this_thread(store, "s", args.events)
        store.close()
        on_loop = uvloop.run(on_the_loop(path, args.events))
        prompts = max(args.events, 5000)  # the CPU clock ticks every 10 ms
        agents = {
            name: uvloop.run(agent_process(where, prompts))
            for name, where in (("memory", "memory"), ("SQLite", str(Path(tmp) / "w10.sqlite3")))
        }
    pinned = "CPU 0" if os.environ.get("ACPSTACK_BENCH_PINNED") == "1" else "not pinned"
    print(f"{args.events} one-event commits, SQLite (WAL, synchronous=NORMAL), {pinned}, ", end="")
    print(f"load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'step':<48} {'p50 µs':>8} {'p99 µs':>8}")
    for name, samples in steps.items():
        print(f"  {name:<46} {summary(samples)}")
    total = [sum(parts) for parts in zip(*steps.values(), strict=True)]
    print(f"  {'(the five statements)':<46} {summary(total)}")
    print(f"{'append_events, this thread: wall':<48} {summary(wall)}")
    print(f"{'append_events, this thread: CPU':<48} {summary(cpu)}")
    print(f"\n{'on the event loop':<48} {'p50 µs':>8} {'p99 µs':>8} {'loop CPU µs':>12}")
    for name, (samples, loop_cpu) in on_loop.items():
        print(f"  {name:<46} {summary(samples)} {loop_cpu:12.1f}")
    print(f"\nW10's agent over a pipe, {prompts} prompts after {WARM_PROMPTS}: per prompt")
    for name, figures in agents.items():
        print(f"  SessionAgent + {name}:")
        for key, value in figures.items():
            unit = "" if key.endswith("switches") else " µs"
            print(f"    {key:<44} {value:8.1f}{unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
