"""Benchmark client on the official Python SDK: `pysdk_client.py WORKLOAD -- AGENT ARGV...`."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from _async_workloads import Tally, measure
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    TextContentBlock,
)
from acp.stdio import spawn_agent_process


class BenchClient(Tally):
    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        text = update.content.text
        expected = self.counts.get(session_id, 0)
        if len(text) != self.size or int(text[:8]) != expected:
            self.fail(session_id, text)
        self.counts[session_id] = expected + 1

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=self.read_content)


class Driver:
    """What `_async_workloads` needs, on the SDK's connection."""

    def __init__(self, tally: BenchClient, conn: Any, pid: int) -> None:
        self.tally, self.agent_pid, self.conn = tally, pid, conn

    async def new_session(self) -> str:
        return str((await self.conn.new_session(cwd="/tmp", mcp_servers=[])).session_id)

    def prompt_request(self, sid: str, text: str) -> Any:
        return {"session_id": sid, "prompt": [TextContentBlock(type="text", text=text)]}

    async def send_prompt(self, request: Any) -> object:
        return await self.conn.prompt(**request)


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
        return await measure(workload, Driver(client, conn, proc.pid), started)


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(asyncio.run(run(workload, agent))))


if __name__ == "__main__":
    main()
