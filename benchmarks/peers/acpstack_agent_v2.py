"""Benchmark agent on acpstack's public API, speaking protocol v2 only (W1 and W2 over v2).

A prompt is answered at once with its message id (v2's acknowledgement); the turn then
runs in a task of its own, as v2 has it: the user's message echoed (`user_message`, which
v2 requires), `running`, the work, and an idle state update with the stop reason. Prompts:
"stream N [SIZE]" sends N message chunks of SIZE characters (default 40: an 8-digit index,
then "x"), anything else ends the turn at once. Full validation, nothing skipped.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from acpstack import Agent, serve_stdio
from acpstack.schema import v2

RUNNING = v2.SessionUpdateRunningStateUpdate()
IDLE = v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn")


class BenchAgentV2(Agent):
    protocol_versions = (2,)

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, object]] = {}
        self.turns: set[asyncio.Task[None]] = set()  # held until done (the loop holds weakly)
        self.message_ids = itertools.count(1)

    async def v2_initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        return v2.InitializeResponse(
            protocol_version=2,
            info=v2.Implementation(name="acpstack-bench-v2", version="1"),
            capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),
        )

    async def v2_session_new(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        sid = f"s{len(self.sessions):06d}"
        self.sessions[sid] = {"cwd": params.cwd, "turns": 0}
        return v2.NewSessionResponse(session_id=sid)

    async def v2_session_prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        message_id = f"u{next(self.message_ids)}"
        turn = asyncio.get_running_loop().create_task(self.turn(params, message_id))
        self.turns.add(turn)
        turn.add_done_callback(self.turns.discard)
        return v2.PromptResponse(message_id=message_id)

    async def turn(self, params: v2.PromptRequest, message_id: str) -> None:
        sid = params.session_id
        await self.send(sid, v2.UserMessage(message_id=message_id, content=params.prompt))
        await self.send(sid, RUNNING)
        block = params.prompt[0]
        command, *args = (block.text if isinstance(block, v2.TextContent) else "").split()
        if command == "stream":
            pad = "x" * (int(args[1]) - 8 if len(args) > 1 else 32)
            reply = f"a{message_id}"
            for i in range(int(args[0])):
                text = v2.TextContent(text=f"{i:08d}{pad}")
                await self.send(sid, v2.AgentMessageChunk(message_id=reply, content=text))
        await self.send(sid, IDLE)

    async def send(self, sid: str, update: Any) -> None:
        await self.client.connection.notify(
            "session/update", v2.UpdateSessionNotification(session_id=sid, update=update)
        )


if __name__ == "__main__":
    serve_stdio(BenchAgentV2())
