"""What the core tests share: a client that records message chunks slower than an agent sends
them, and a stubborn task for the cancellation tests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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


WAIT = 30  # generous: every wait on a stubborn task ends on an event


class Stubborn:
    """A coroutine that, once cancelled, ends only when `release` is set: its owner is
    certainly still waiting for it when the owner itself is cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            await self.release.wait()
            raise


async def cancel_while_waiting(owner: asyncio.Task[Any], stubborn: Stubborn) -> None:
    """Cancel `owner` once it is waiting for the stubborn task; it must end cancelled."""
    await asyncio.wait_for(stubborn.cancelled.wait(), WAIT)
    owner.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(owner, WAIT)
    finally:
        stubborn.release.set()
