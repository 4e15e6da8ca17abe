"""Broken: sends updates the schema refuses (a content block without `type`, a tool call
without `title`) and a session/new result without sessionId's string type."""

from typing import Any

from raw_agent import RawAgent, main


class InvalidSchema(RawAgent):
    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        self.update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"text": text}})
        self.update(session_id, {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "read"})
        return {"stopReason": "end_turn"}


main(InvalidSchema)
