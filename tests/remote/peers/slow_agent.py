"""An agent for `acpstack serve --agent`: 'slow N' streams the words w1 .. wN, one every
50 ms, so that a turn is still running when its client goes away. Its sessions persist in
the SQLite file named by ACPSTACK_TEST_STORE (one per test), so a new connection can load
them."""

from __future__ import annotations

import asyncio
import os

from acpstack.agent import SessionAgent, SqliteSessionStore, Turn
from acpstack.schema import v1 as acp


class SlowAgent(SessionAgent):
    name = "slow-agent"

    def __init__(self) -> None:
        super().__init__(store=SqliteSessionStore(os.environ["ACPSTACK_TEST_STORE"]))

    async def prompt(self, turn: Turn) -> acp.StopReason:
        words = turn.text.split()
        count = int(words[1]) if len(words) == 2 and words[0] == "slow" else 1
        for index in range(1, count + 1):
            await turn.say(f"w{index} ")
            await asyncio.sleep(0.05)
        return "end_turn"
