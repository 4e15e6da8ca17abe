"""Benchmark client on acpstack's public API: `acpstack_client.py WORKLOAD -- AGENT ARGV...`.

Prints one JSON line with the measurement. Checks counts and order of what it received.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from _common import (
    N_LONG_STREAM,
    N_READS,
    N_ROUND_TRIPS,
    N_SESSIONS_W4,
    N_SESSIONS_W6,
    N_STREAM,
    N_UPDATES_W4,
    percentiles,
    rss_mb,
)

import acpstack
from acpstack import Client, spawn_agent
from acpstack.schema import v1 as acp


class BenchClient(Client):
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.rss_probe: tuple[int, int] | None = None  # (agent pid, update index) for W7
        self.rss_at_probe = 0.0

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        assert isinstance(update, acp.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        )
        expected = self.counts.get(params.session_id, 0)
        if int(update.content.text[:8]) != expected:
            raise SystemExit(f"update out of order: {update.content.text[:8]} != {expected}")
        self.counts[params.session_id] = expected + 1
        if self.rss_probe is not None and expected == self.rss_probe[1]:
            self.rss_at_probe = rss_mb(self.rss_probe[0])

    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        return acp.ReadTextFileResponse(content="hello\n")


INIT = acp.InitializeRequest(
    protocol_version=1,
    client_capabilities=acp.ClientCapabilities(
        fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=False), terminal=False
    ),
)


def prompt(sid: str, text: str) -> acp.PromptRequest:
    return acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=text)])


async def run(workload: str, agent: list[str]) -> dict[str, object]:
    client = BenchClient()
    started = time.perf_counter()
    async with spawn_agent(agent, client) as conn:
        peer = conn.agent
        await peer.initialize(INIT)
        if workload == "W5":
            return {"value": (time.perf_counter() - started) * 1000}
        new = acp.NewSessionRequest(cwd="/tmp", mcp_servers=[])
        if workload == "W6":
            for _ in range(N_SESSIONS_W6):
                await peer.session_new(new)
            return {"value": rss_mb(conn.transport.pid)}  # type: ignore[attr-defined]
        sid = (await peer.session_new(new)).session_id
        if workload == "W1":
            t0 = time.perf_counter()
            await peer.session_prompt(prompt(sid, f"stream {N_STREAM}"))
            elapsed = time.perf_counter() - t0
            assert client.counts[sid] == N_STREAM
            return {"value": N_STREAM / elapsed}
        if workload == "W2":
            samples = []
            request = prompt(sid, "noop")
            for _ in range(N_ROUND_TRIPS):
                t0 = time.perf_counter()
                await peer.session_prompt(request)
                samples.append((time.perf_counter() - t0) * 1e6)
            return percentiles(samples)
        if workload == "W7":
            # Agent RSS after the first 20% of a long stream and at its end: no growth per message.
            pid = conn.transport.pid  # type: ignore[attr-defined]
            client.rss_probe = (pid, N_LONG_STREAM // 5)
            await peer.session_prompt(prompt(sid, f"stream {N_LONG_STREAM}"))
            assert client.counts[sid] == N_LONG_STREAM
            end = rss_mb(pid)
            return {"value": end - client.rss_at_probe, "start": client.rss_at_probe, "end": end}
        if workload == "W3":
            t0 = time.perf_counter()
            await peer.session_prompt(prompt(sid, f"read {N_READS}"))
            return {"value": N_READS / (time.perf_counter() - t0)}
        if workload == "W4":
            sids = [sid] + [
                (await peer.session_new(new)).session_id for _ in range(N_SESSIONS_W4 - 1)
            ]
            t0 = time.perf_counter()
            await asyncio.gather(
                *(peer.session_prompt(prompt(s, f"stream {N_UPDATES_W4}")) for s in sids)
            )
            elapsed = time.perf_counter() - t0
            assert all(client.counts[s] == N_UPDATES_W4 for s in sids)
            return {"value": elapsed}
    raise SystemExit(f"unknown workload {workload}")


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(acpstack.run(run(workload, agent))))


if __name__ == "__main__":
    main()
