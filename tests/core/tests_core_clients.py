"""A test client shared by the core tests: it records message chunks, slower than an agent sends them."""

from __future__ import annotations

import asyncio

from acpstack import Client
from acpstack.schema import v1 as acp


class SlowCollector(Client):
    """Records the text of every agent_message_chunk, yielding to the loop every
    `yield_every` updates so that it falls behind a fast agent and reading has to pause."""

    def __init__(self, yield_every: int = 1) -> None:
        self.texts: list[str] = []
        self._yield_every = yield_every

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        assert isinstance(update, acp.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        )
        self.texts.append(update.content.text)
        if len(self.texts) % self._yield_every == 0:
            await asyncio.sleep(0)
