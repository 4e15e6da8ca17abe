"""Broken: ends turns with stopReason "done" (not a stop reason) and answers a cancelled
turn with end_turn (a while after the cancel: the turn was still running when it came, and
a request sent after the cancel is answered first, which shows it)."""

import asyncio
from typing import Any

from raw_agent import RawAgent, main


class WrongStopReason(RawAgent):
    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        if text == "wait":
            self.chunk(session_id, "waiting")
            await cancelled.wait()
            await asyncio.sleep(0.3)
            return {"stopReason": "end_turn"}
        self.chunk(session_id, f"echo: {text}")
        return {"stopReason": "done"}


main(WrongStopReason)
