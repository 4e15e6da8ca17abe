"""Broken: reads a file through the client and creates a terminal without checking the
client's capabilities (and never releases the terminal)."""

from typing import Any

from raw_agent import RawAgent, main


class CallsGated(RawAgent):
    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        cwd = self.sessions[session_id]
        await self.call("fs/read_text_file", {"sessionId": session_id, "path": f"{cwd}/README.md"})
        await self.call("terminal/create", {"sessionId": session_id, "command": "true"})
        return await super().turn(session_id, text, cancelled)


main(CallsGated)
