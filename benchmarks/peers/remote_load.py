"""Many remote sessions at once: `python remote_load.py URL CONNECTIONS SESSIONS UPDATES`.

Opens CONNECTIONS connections to URL (http:// or ws://), SESSIONS sessions on each, and
has every session stream UPDATES chunks at the same time (the bench agent's
"stream N"); checks that each session got all of its chunks in order. Prints
{"sessions", "updates", "seconds", "updates_per_s"} as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from contextlib import AsyncExitStack

from acpstack import Client
from acpstack.client import connect_remote
from acpstack.rpc import run
from acpstack.schema import v1 as acp


class Counter(Client):
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.failures: list[str] = []

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        if isinstance(update, acp.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            expected = self.counts.get(params.session_id, 0)
            if int(update.content.text[:8]) != expected:
                self.failures.append(f"{params.session_id} out of order at {expected}")
            self.counts[params.session_id] = expected + 1


async def main(url: str, connections: int, sessions: int, updates: int) -> dict[str, object]:
    clients = [Counter() for _ in range(connections)]
    async with AsyncExitStack() as stack:
        conns = [
            await stack.enter_async_context(connect_remote(url, c, timeout=120)) for c in clients
        ]
        await asyncio.gather(*(conn.agent.initialize(timeout=120) for conn in conns))

        async def open_sessions(conn: object) -> list[str]:
            agent = conn.agent  # type: ignore[attr-defined]
            return [
                (
                    await agent.session_new(acp.NewSessionRequest(cwd="/tmp", mcp_servers=[]))
                ).session_id
                for _ in range(sessions)
            ]

        session_ids = await asyncio.gather(*(open_sessions(conn) for conn in conns))
        t0 = time.perf_counter()
        prompts = [
            conn.agent.session_prompt(
                acp.PromptRequest(
                    session_id=sid, prompt=[acp.TextContent(text=f"stream {updates}")]
                )
            )
            for conn, sids in zip(conns, session_ids, strict=True)
            for sid in sids
        ]
        results = await asyncio.gather(*prompts)
        seconds = time.perf_counter() - t0
    assert all(r.stop_reason == "end_turn" for r in results)
    failures = [f for c in clients for f in c.failures]
    got = sum(sum(c.counts.values()) for c in clients)
    total = connections * sessions
    if failures or got != total * updates:
        raise SystemExit(
            f"lost or reordered updates: got {got} of {total * updates}; {failures[:3]}"
        )
    return {"sessions": total, "updates": got, "seconds": seconds, "updates_per_s": got / seconds}


if __name__ == "__main__":
    url, connections, sessions, updates = sys.argv[1], *map(int, sys.argv[2:5])
    print(json.dumps(run(main(url, connections, sessions, updates))))
