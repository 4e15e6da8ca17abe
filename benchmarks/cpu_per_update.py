"""CPU time per streamed update, agent and client apart: `python -m benchmarks.cpu_per_update`.

W9's throughput moves with everything else the machine runs; the CPU each side spends per
update does not (much). This streams `--updates` message chunks of 40 bytes (one prompt,
after a warm-up prompt) from each agent of W9 (the raw `Agent`, `SessionAgent` with each
store, over protocol v1 and v2) to a bare acpstack client over real pipes, and reads the
agent process's CPU time from /proc and the client's from `getrusage`, before and after
the prompt. Prints the median per agent over `--reps` runs, in µs per update, and the
ratios that W9's goals are about when client and agent share one CPU (as in W9): total
CPU of the raw `Agent` over that agent's, and v2's against v1's.

    python -m benchmarks.cpu_per_update [--updates 200000] [--reps 3] [--only raw,memory,...]

Linux only (/proc). The clock ticks are 10 ms: keep `--updates` large enough that a run
spends well over a second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._setup import acpstack_python

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
ROWS = ("raw", "memory", "sqlite", "memory-v2", "sqlite-v2")


def _agent_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _measure(version: int, updates: int, agent: list[str]) -> tuple[float, float]:
    """(agent µs, client µs) per update for one streaming prompt of `updates` chunks."""
    from acpstack import Client, spawn_agent
    from acpstack.schema import v1, v2

    idle: list[asyncio.Future[None]] = []

    class Counter(Client):
        async def session_update(self, params: v1.SessionNotification) -> None:
            return None

        async def v2_session_update(self, params: v2.UpdateSessionNotification) -> None:
            if isinstance(params.update, v2.IdleStateUpdate) and idle and not idle[0].done():
                idle[0].set_result(None)

    async with spawn_agent(agent, Counter()) as conn:
        peer = conn.agent
        if version == 1:
            await peer.initialize(v1.InitializeRequest(protocol_version=1))
            new = v1.NewSessionRequest(cwd="/tmp", mcp_servers=[])
            sid = (await peer.session_new(new)).session_id

            async def turn(text: str) -> None:
                request = v1.PromptRequest(session_id=sid, prompt=[v1.TextContent(text=text)])
                await peer.session_prompt(request)

        else:
            info = v2.Implementation(name="cpu-per-update", version="1")
            await peer.initialize(v2.InitializeRequest(protocol_version=2, info=info))
            sid = (await peer.call("session/new", v2.NewSessionRequest(cwd="/tmp"))).session_id

            async def turn(text: str) -> None:
                idle[:] = [asyncio.get_running_loop().create_future()]
                request = v2.PromptRequest(session_id=sid, prompt=[v2.TextContent(text=text)])
                await peer.call("session/prompt", request)
                await idle[0]

        await turn("stream 2000 40")  # warm-up: decoders built, imports done
        pid: int = conn.transport.pid  # type: ignore[attr-defined]
        agent_before, client_before = _agent_cpu(pid), _own_cpu()
        await turn(f"stream {updates} 40")
        agent_cpu, client_cpu = _agent_cpu(pid) - agent_before, _own_cpu() - client_before
    return agent_cpu / updates * 1e6, client_cpu / updates * 1e6


def _one(args: list[str]) -> None:
    """In a child process: `--one VERSION UPDATES AGENT...`, prints "agent client"."""
    import acpstack

    result = acpstack.run(_measure(int(args[0]), int(args[1]), args[2:]))
    print(f"{result[0]:.4f} {result[1]:.4f}")


def main() -> int:
    if sys.argv[1:2] == ["--one"]:
        _one(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cpu_per_update")
    parser.add_argument("--updates", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", default=",".join(ROWS), help=f"some of {','.join(ROWS)}")
    args = parser.parse_args()
    rows = [r for r in args.only.split(",") if r]
    unknown = set(rows) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    ours = str(acpstack_python(sys.executable))
    samples: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for row in rows:
                store, _, version = row.partition("-")
                agent = (
                    [ours, str(PEERS / "acpstack_agent.py")]
                    if store == "raw"
                    else [
                        ours,
                        str(PEERS / "acpstack_session_agent.py"),
                        "memory" if store == "memory" else f"{tmp}/{row}-{rep}.sqlite3",
                    ]
                )
                argv = [ours, "-m", "benchmarks.cpu_per_update", "--one"]
                argv += ["2" if version == "v2" else "1", str(args.updates), *agent]
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=900, cwd=HERE.parent
                )
                if done.returncode != 0:
                    raise SystemExit(f"{row}: exit {done.returncode}: {done.stderr[-600:]}")
                agent_us, client_us = map(float, done.stdout.split())
                samples.setdefault(row, []).append((agent_us, client_us))
                print(
                    f"rep {rep + 1} {row}: agent {agent_us:.2f} client {client_us:.2f} µs",
                    file=sys.stderr,
                )
    _report(samples, args.updates, args.reps)
    return 0


def _report(samples: dict[str, list[tuple[float, float]]], updates: int, reps: int) -> None:
    medians: dict[str, tuple[float, float, float]] = {}
    for row, values in samples.items():
        agent = statistics.median(v[0] for v in values)
        client = statistics.median(v[1] for v in values)
        medians[row] = (agent, client, agent + client)
    print(f"\nCPU µs per update, {updates:,} updates, medians of {reps}\n")
    print("| agent | agent µs | client µs | total µs | raw total / total |")
    print("| --- | ---: | ---: | ---: | ---: |")
    raw: Any = medians.get("raw")
    for row, (agent, client, total) in medians.items():
        ratio = f"{raw[2] / total:.2f}" if raw else ""
        print(f"| {row} | {agent:.2f} | {client:.2f} | {total:.2f} | {ratio} |")
    for store in ("memory", "sqlite"):
        if store in medians and f"{store}-v2" in medians:
            v2_share = medians[store][2] / medians[f"{store}-v2"][2]
            print(f"\n{store}: v2 against v1 (total CPU): {v2_share:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
