"""Correct: every turn ends at once, its chunk and its answer written together, so a
session/cancel sent on the chunk comes after the turn is over: the agent breaks nothing."""

import json
import sys
from typing import Any

from raw_agent import RawAgent, main


class FastTurn(RawAgent):
    def __init__(self) -> None:
        super().__init__()
        self.chunks: dict[str, Any] = {}

    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        content = {"type": "text", "text": f"done: {text}"}
        update = {"sessionUpdate": "agent_message_chunk", "content": content}
        self.chunks[session_id] = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }
        return {"stopReason": "end_turn", "_session": session_id}

    def reply(self, rid: Any, result: Any) -> None:
        if not isinstance(result, dict) or "_session" not in result:
            super().reply(rid, result)
            return
        chunk = self.chunks.pop(result.pop("_session"))
        answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        sys.stdout.buffer.write(b"".join(json.dumps(m).encode() + b"\n" for m in (chunk, answer)))
        sys.stdout.buffer.flush()


main(FastTurn)
