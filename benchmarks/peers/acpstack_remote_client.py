"""W8 client on acpstack: `python acpstack_remote_client.py URL` (http:// or ws://).

One prompt streaming N_STREAM 40-byte chunks (updates/s at the client, count and order
checked), then N_ROUND_TRIPS sequential prompts answered at once (p50/p99 µs). Prints
{"value": updates/s, "p50": µs, "p99": µs}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    N_ROUND_TRIPS,
    N_STREAM,
    WARM_ROUND_TRIPS,
    WARM_STREAM,
    percentiles,
)

from acpstack import Client  # noqa: E402
from acpstack.client import connect_remote  # noqa: E402
from acpstack.rpc import run  # noqa: E402
from acpstack.schema import v1 as acp  # noqa: E402


class Counter(Client):
    def __init__(self) -> None:
        self.count = 0
        self.failure: str | None = None

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        if isinstance(update, acp.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            if int(update.content.text[:8]) != self.count and self.failure is None:
                self.failure = f"out of order at {self.count}"
            self.count += 1


async def main(url: str) -> dict[str, object]:
    client = Counter()
    async with connect_remote(url, client) as conn:
        agent = conn.agent
        await agent.initialize()
        sid = (
            await agent.session_new(acp.NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        ).session_id

        def prompt(text: str) -> acp.PromptRequest:
            return acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=text)])

        # Warm-up (connections, caches; the TypeScript client's V8), as in _common.py.
        await agent.session_prompt(prompt(f"stream {WARM_STREAM}"))
        for _ in range(WARM_ROUND_TRIPS):
            await agent.session_prompt(prompt("hi"))
        if client.count != WARM_STREAM or client.failure:
            raise RuntimeError(f"warm-up got {client.count} updates ({client.failure})")
        client.count = 0
        t0 = time.perf_counter()
        await agent.session_prompt(prompt(f"stream {N_STREAM}"))
        elapsed = time.perf_counter() - t0
        if client.count != N_STREAM or client.failure:
            raise RuntimeError(f"got {client.count} updates ({client.failure})")
        samples = []
        for _ in range(N_ROUND_TRIPS):
            t = time.perf_counter()
            await agent.session_prompt(prompt("hi"))
            samples.append((time.perf_counter() - t) * 1e6)
    return {"value": N_STREAM / elapsed, **percentiles(samples)}


if __name__ == "__main__":
    print(json.dumps(run(main(sys.argv[1]))))
