"""Benchmark client on acpstack's public API: `acpstack_client.py WORKLOAD -- AGENT ARGV...`.

Prints one JSON line with the measurement. Checks counts, order and sizes of what it received.
With `ACPSTACK_BENCH_CHAIN_IN_PROCESS=N` it reaches the agent through a proxy chain it runs
itself: `acpstack.proxy.Conductor` with N pass-through `Proxy` instances, all in this
process (what a Python host embedding a chain runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from _async_workloads import Tally, measure, settle
from _common import N_LONG_STREAM, rss_mb

import acpstack
from acpstack import Client, spawn_agent
from acpstack.client import AgentPeer, ClientConnection
from acpstack.schema import v1 as acp


class BenchClient(Client, Tally):
    def __init__(self) -> None:
        Tally.__init__(self)
        self.rss_probe: tuple[int, int] | None = None  # (agent pid, update index) for W7
        self.rss_at_probe = 0.0

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        assert isinstance(update, acp.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        )
        sid, text = params.session_id, update.content.text
        expected = self.counts.get(sid, 0)
        if len(text) != self.size or int(text[:8]) != expected:
            self.fail(sid, text)
        self.counts[sid] = expected + 1
        if self.rss_probe is not None and expected == self.rss_probe[1]:
            self.rss_at_probe = rss_mb(self.rss_probe[0])

    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        return acp.ReadTextFileResponse(content=self.read_content)


INIT = acp.InitializeRequest(
    protocol_version=1,
    client_capabilities=acp.ClientCapabilities(
        fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=False), terminal=False
    ),
)
NEW = acp.NewSessionRequest(cwd="/tmp", mcp_servers=[])


class Driver:
    """What `_async_workloads` needs, on acpstack's typed peer."""

    def __init__(self, tally: BenchClient, peer: AgentPeer, pid: int) -> None:
        self.tally, self.agent_pid, self.peer = tally, pid, peer
        self.send_prompt = peer.session_prompt

    async def new_session(self) -> str:
        return (await self.peer.session_new(NEW)).session_id

    def prompt_request(self, sid: str, text: str) -> Any:
        return acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=text)])


async def long_stream(d: Driver) -> dict[str, object]:
    """W7: agent RSS after the first 20% of a long stream and at its end: no growth per message."""
    sid = await d.new_session()
    d.tally.rss_probe = (d.agent_pid, N_LONG_STREAM // 5)
    await d.send_prompt(d.prompt_request(sid, f"stream {N_LONG_STREAM}"))
    await settle(d.tally, [sid], N_LONG_STREAM)
    end = rss_mb(d.agent_pid)
    start = d.tally.rss_at_probe
    return {"value": end - start, "start": start, "end": end}


@contextlib.asynccontextmanager
async def connected(
    agent: list[str], client: Client
) -> AsyncIterator[tuple[ClientConnection, int]]:
    """The connection to the agent (directly, or through an in-process chain) and the pid
    of the agent's process (0 when the client does not hold it)."""
    proxies = int(os.environ.get("ACPSTACK_BENCH_CHAIN_IN_PROCESS") or 0)
    if not proxies:
        async with spawn_agent(agent, client) as conn:
            yield conn, conn.transport.pid  # type: ignore[attr-defined]
        return
    from acpstack.client import connect_client
    from acpstack.proxy import Conductor, Proxy
    from acpstack.transports import memory_pair

    ours, theirs = memory_pair()
    chain = asyncio.ensure_future(Conductor([Proxy() for _ in range(proxies)], agent).run(theirs))
    conn = connect_client(client, ours)
    async with conn.connection:
        yield conn, 0
    await chain


async def run(workload: str, agent: list[str]) -> dict[str, object]:
    client = BenchClient()
    started = time.perf_counter()
    async with connected(agent, client) as (conn, pid):
        await conn.agent.initialize(INIT)
        driver = Driver(client, conn.agent, pid)
        if workload == "W7":
            return await long_stream(driver)
        return await measure(workload, driver, started)


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(acpstack.run(run(workload, agent))))


if __name__ == "__main__":
    main()
