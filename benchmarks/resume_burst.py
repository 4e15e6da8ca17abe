"""A failover's burst on one server, small and alone: many `session/resume`s at once.

    python -m benchmarks.resume_burst [--store sqlite|postgres] [--transport ws|http|http-streams]
        [--sessions 170] [--connections 17] [--turns 3] [--debug]

Starts one `acpstack serve` (agent: tools/cluster/stream_agent.py) on a store (an SQLite
file, or a throwaway PostgreSQL as tools/cluster starts it), opens SESSIONS sessions with
TURNS turns each over CONNECTIONS connections, then restarts the server (so that, like a
failover's survivor, it holds none of them), opens CONNECTIONS fresh
connections and sends every session's `session/resume` at once, as the clients of a dead
server do on the survivor. It prints one JSON line: the time until every resume
was answered, each resume's answer time (median, p90, slowest), the `initialize`s, how
late a `/healthz` probe sent during the burst came back (the server's loop held), and the
CPU seconds the burst cost the server and the clients (`server_cpu_s`, `client_cpu_s`). With
`--debug` the server runs under asyncio's debug mode and the slow steps it logged (callbacks
holding the loop over 100 ms) are counted and the first few printed; with `--profile FILE`
the restarted server runs under cProfile and writes its profile there when it stops.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from acpstack import Client
from acpstack.client import connect_remote
from acpstack.schema import v1 as acp
from tools.cluster._cluster import STREAM_AGENT, Node
from tools.cluster._postgres import LocalPostgres

CWD = "/tmp"
TIMEOUT = 300


class Quiet(Client):
    """Takes the session updates and counts them (what a resume replays, if anything)."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, params: acp.SessionNotification) -> None:
        self.updates += 1


async def create(url: str, sessions: int, connections: int, turns: int) -> list[str]:
    """Open `sessions` sessions with `turns` turns each; the connections close after."""

    async def one_connection(count: int) -> list[str]:
        async with connect_remote(url, Quiet(), timeout=TIMEOUT) as conn:
            await conn.agent.initialize(timeout=TIMEOUT)
            ids = []
            for _ in range(count):
                new = await conn.agent.session_new(
                    acp.NewSessionRequest(cwd=CWD, mcp_servers=[]), timeout=TIMEOUT
                )
                ids.append(new.session_id)
                for turn in range(turns):
                    prompt = acp.PromptRequest(
                        session_id=new.session_id,
                        prompt=[acp.TextContent(text=f"turn {turn} chunks 3")],
                    )
                    await conn.agent.session_prompt(prompt, timeout=TIMEOUT)
            return ids

    per = [sessions // connections + (i < sessions % connections) for i in range(connections)]
    groups = await asyncio.gather(*(one_connection(n) for n in per if n))
    return [sid for group in groups for sid in group]


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process `pid` has used (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def healthz_late(port: int) -> float:
    """Seconds a `/healthz` took (a thread's blocking call: the loop here is not measured)."""
    began = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=TIMEOUT) as answer:
        answer.read()
    return time.monotonic() - began


async def burst(
    url: str, port: int, groups: list[list[str]], one_stream: bool = True
) -> dict[str, Any]:
    """Fresh connections, then every session's resume at once; the answers' times."""
    answered: list[float] = []
    initialize: list[float] = []
    go = asyncio.Event()
    ready = 0
    began = 0.0

    async def one_connection(ids: list[str]) -> None:
        nonlocal ready
        options = {} if one_stream else {"one_stream": False}
        async with connect_remote(url, Quiet(), timeout=TIMEOUT, **options) as conn:
            start = time.monotonic()
            await conn.agent.initialize(timeout=TIMEOUT)
            initialize.append(time.monotonic() - start)
            ready += 1
            if ready == len(groups):
                go.set()
            await go.wait()

            async def resume(sid: str) -> None:
                await conn.agent.session_resume(
                    acp.ResumeSessionRequest(session_id=sid, cwd=CWD, mcp_servers=[]),
                    timeout=TIMEOUT,
                )
                answered.append(time.monotonic() - began)

            await asyncio.gather(*(resume(sid) for sid in ids))

    tasks = [asyncio.create_task(one_connection(ids)) for ids in groups]
    await go.wait()
    began = time.monotonic()
    probe = asyncio.create_task(asyncio.to_thread(healthz_late, port))
    await asyncio.gather(*tasks)
    total = time.monotonic() - began
    answered.sort()
    return {
        "all_answered_s": round(total, 3),
        "resumes": len(answered),
        "resume_median_s": round(statistics.median(answered), 3),
        "resume_p90_s": round(answered[int(len(answered) * 0.9) - 1], 3),
        "resume_slowest_s": round(answered[-1], 3),
        "initialize_median_s": round(statistics.median(initialize), 3),
        "initialize_slowest_s": round(max(initialize), 3),
        "healthz_during_burst_s": round(await probe, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--transport", choices=("ws", "http", "http-streams"), default="ws")
    parser.add_argument("--sessions", type=int, default=170)
    parser.add_argument("--connections", type=int, default=17)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--debug", action="store_true", help="asyncio debug mode on the server")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the burst's server to FILE")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="acpstack-burst-") as tmp:
        postgres = LocalPostgres() if args.store == "postgres" else None
        if postgres is not None:
            postgres.start()
            store = postgres.create_database("acpstack")
        else:
            store = str(Path(tmp) / "sessions.db")
        env = {**os.environ, "ACPSTACK_STORE": store}
        if args.debug:
            env["PYTHONASYNCIODEBUG"] = "1"
        argv = [sys.executable, "-m", "acpstack", "serve", "--port", "0", "--agent", STREAM_AGENT]
        argv += ["--max-connections", "4096", "--no-token"]
        node = Node(argv, env)
        try:
            node.wait_ready()
            scheme = "ws" if args.transport == "ws" else "http"
            url = f"{scheme}://127.0.0.1:{node.port}/acp"
            began = time.monotonic()
            ids = asyncio.run(create(url, args.sessions, args.connections, args.turns))
            setup = time.monotonic() - began
            # As on a failover's survivor: a server that never held these sessions,
            # so each resume reads its session from the store.
            node.stop()
            if args.profile:
                argv = [sys.executable, "-m", "cProfile", "-o", args.profile, *argv[1:]]
            node = Node(argv, env)
            node.wait_ready()
            url = f"{scheme}://127.0.0.1:{node.port}/acp"
            groups = [ids[i :: args.connections] for i in range(args.connections)]
            server_cpu = cpu_seconds(node.proc.pid)
            client_cpu = time.process_time()
            one_stream = args.transport != "http-streams"
            result = asyncio.run(burst(url, node.port, groups, one_stream))
            result["server_cpu_s"] = round(cpu_seconds(node.proc.pid) - server_cpu, 3)
            result["client_cpu_s"] = round(time.process_time() - client_cpu, 3)
        finally:
            node.stop()
            if postgres is not None:
                postgres.stop()
    result = {
        "store": args.store,
        "transport": args.transport,
        "sessions": len(ids),
        "connections": args.connections,
        "turns": args.turns,
        "setup_s": round(setup, 1),
        **result,
        "slow_steps": len(node.slow_steps),
        "load": os.getloadavg()[0],
    }
    print(json.dumps(result))
    for line in node.slow_steps[:5]:
        print(line.strip()[:300], file=sys.stderr)


if __name__ == "__main__":
    main()
