"""Broken: sends a message chunk of the turn after answering session/prompt, and a chunk
for another session during the turn."""

import asyncio
from typing import Any

from raw_agent import RawAgent, main


class LateUpdate(RawAgent):
    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        for other in self.sessions:
            if other != session_id:
                self.chunk(other, "a chunk for the wrong session")
        asyncio.get_running_loop().call_later(0.05, self.chunk, session_id, "too late")
        return await super().turn(session_id, text, cancelled)


main(LateUpdate)
