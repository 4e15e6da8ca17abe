"""`python -m benchmarks.session_memory`: Python heap per open `SessionAgent` session.

W6 measures a minimal agent's RSS; this measures what the SessionAgent runtime itself keeps
in memory per open session (its history is in SQLite, not in memory), with tracemalloc,
over an in-memory connection so only the two connections' own state is around.
"""

from __future__ import annotations

import asyncio
import gc
import os
import tempfile
import tracemalloc

from acpstack import Client
from acpstack.agent import SessionAgent, SqliteSessionStore
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair

SESSIONS = 5_000


async def measure() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        agent = SessionAgent(store=SqliteSessionStore(os.path.join(tmp, "sessions.db")))
        async with connected_pair(agent, Client()) as pair:
            await pair.agent.initialize(acp.InitializeRequest(protocol_version=1))
            new = acp.NewSessionRequest(cwd=tmp, mcp_servers=[])
            for _ in range(200):  # warm up: caches, decoders, the store's statements
                await pair.agent.session_new(new)
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(SESSIONS):
                await pair.agent.session_new(new)
            gc.collect()
            used = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
    return used / SESSIONS


def main() -> None:
    per_session = asyncio.run(measure())
    print(
        f"SessionAgent: {per_session:,.0f} bytes of Python heap per open session ({SESSIONS:,} sessions, SQLite store)"
    )


if __name__ == "__main__":
    main()
