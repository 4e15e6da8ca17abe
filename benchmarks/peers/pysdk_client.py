"""Benchmark client on the official Python SDK: `pysdk_client.py WORKLOAD -- AGENT ARGV...`."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from _common import (
    N_READS,
    N_ROUND_TRIPS,
    N_SESSIONS_W4,
    N_SESSIONS_W6,
    N_STREAM,
    N_UPDATES_W4,
    percentiles,
    rss_mb,
)
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    TextContentBlock,
)
from acp.stdio import spawn_agent_process


class BenchClient:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        expected = self.counts.get(session_id, 0)
        if int(update.content.text[:8]) != expected:
            raise SystemExit(f"update out of order: {update.content.text[:8]} != {expected}")
        self.counts[session_id] = expected + 1

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        return ReadTextFileResponse(content="hello\n")


async def run(workload: str, agent: list[str]) -> dict[str, object]:
    client = BenchClient()
    started = time.perf_counter()
    async with spawn_agent_process(
        client,
        agent[0],
        *agent[1:],
        env=dict(os.environ),
        transport_kwargs={"stderr": None, "limit": 2**26},
    ) as (conn, proc):
        caps = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=False), terminal=False
        )
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        if workload == "W5":
            return {"value": (time.perf_counter() - started) * 1000}
        if workload == "W6":
            for _ in range(N_SESSIONS_W6):
                await conn.new_session(cwd="/tmp", mcp_servers=[])
            return {"value": rss_mb(proc.pid)}
        sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id

        def text(t: str) -> list[TextContentBlock]:
            return [TextContentBlock(type="text", text=t)]

        if workload == "W1":
            t0 = time.perf_counter()
            await conn.prompt(session_id=sid, prompt=text(f"stream {N_STREAM}"))
            elapsed = time.perf_counter() - t0
            await asyncio.sleep(0.05)  # the SDK may hand notifications over after the response
            assert client.counts[sid] == N_STREAM, client.counts[sid]
            return {"value": N_STREAM / elapsed}
        if workload == "W2":
            samples = []
            for _ in range(N_ROUND_TRIPS):
                t0 = time.perf_counter()
                await conn.prompt(session_id=sid, prompt=text("noop"))
                samples.append((time.perf_counter() - t0) * 1e6)
            return percentiles(samples)
        if workload == "W3":
            t0 = time.perf_counter()
            await conn.prompt(session_id=sid, prompt=text(f"read {N_READS}"))
            return {"value": N_READS / (time.perf_counter() - t0)}
        if workload == "W4":
            sids = [sid] + [
                (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
                for _ in range(N_SESSIONS_W4 - 1)
            ]
            t0 = time.perf_counter()
            await asyncio.gather(
                *(conn.prompt(session_id=s, prompt=text(f"stream {N_UPDATES_W4}")) for s in sids)
            )
            elapsed = time.perf_counter() - t0
            await asyncio.sleep(0.05)
            assert all(client.counts.get(s) == N_UPDATES_W4 for s in sids)
            return {"value": elapsed}
    raise SystemExit(f"unknown workload {workload}")


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(asyncio.run(run(workload, agent))))


if __name__ == "__main__":
    main()
