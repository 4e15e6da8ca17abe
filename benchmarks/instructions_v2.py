"""Bytecode instructions per message over protocol v2: `instructions.py`'s deterministic
measure for the v2 path (the peers of `peers/acpstack_*_v2.py`, in one process over the
in-memory transport). Two paths, each over 200 messages after a warm-up:

- stream: the agent sends `session/update` message chunks (notifications), counted per
  chunk;
- turn: the client sends `session/prompt`, the agent acknowledges it and sends the turn's
  updates (the user's message echoed, `running`, `idle`), and the client waits for the
  idle update: counted per turn (five messages).

    python -m benchmarks.instructions_v2
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from acpstack import Agent, Client
from acpstack.agent import connect_agent
from acpstack.client import connect_client
from acpstack.schema import v2
from acpstack.transports import memory_pair
from benchmarks.instructions import MESSAGES, _count, _tracer

CHUNK = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
RUNNING = v2.SessionUpdateRunningStateUpdate()
IDLE = v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn")


class _Agent(Agent):
    protocol_versions = (2,)

    async def v2_initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        return v2.InitializeResponse(
            protocol_version=2,
            info=v2.Implementation(name="instructions-v2", version="1"),
            capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),
        )

    async def v2_session_new(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="s")

    async def v2_session_prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        asyncio.get_running_loop().create_task(self.turn(params))
        return v2.PromptResponse(message_id="u")

    async def turn(self, params: v2.PromptRequest) -> None:
        await self.send(v2.UserMessage(message_id="u", content=params.prompt))
        await self.send(RUNNING)
        block = params.prompt[0]
        if isinstance(block, v2.TextContent) and block.text == "stream":
            for i in range(MESSAGES):
                text = v2.TextContent(text=f"{i:08d} {CHUNK}")
                await self.send(v2.AgentMessageChunk(message_id="a", content=text))
        await self.send(IDLE)

    async def send(self, update: Any) -> None:
        notification = v2.UpdateSessionNotification(session_id="s", update=update)
        await self.client.connection.notify("session/update", notification)


class _Client(Client):
    def __init__(self) -> None:
        self.idle: asyncio.Future[None] | None = None

    async def v2_session_update(self, params: v2.UpdateSessionNotification) -> None:
        if isinstance(params.update, v2.IdleStateUpdate) and self.idle is not None:
            self.idle.set_result(None)


async def measure() -> dict[str, float]:
    """Instructions per message (stream) and per turn (turn)."""
    agent_side, client_side = memory_pair()
    agent = connect_agent(_Agent(), agent_side)
    handler = _Client()
    client = connect_client(handler, client_side)
    results: dict[str, float] = {}

    async def prompt(text: str) -> None:
        handler.idle = asyncio.get_running_loop().create_future()
        request = v2.PromptRequest(session_id="s", prompt=[v2.TextContent(text=text)])
        await client.agent.call("session/prompt", request)
        await asyncio.wait_for(handler.idle, 30)

    async with agent, client.connection:
        info = v2.Implementation(name="instructions-v2", version="1")
        await client.agent.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        await client.agent.call("session/new", v2.NewSessionRequest(cwd="/"))
        for path in ("stream", "turn"):
            await prompt(path)  # warm-up: lazy decoders are built
            _count[0] = 0
            sys.settrace(_tracer)
            try:
                for _ in range(1 if path == "stream" else MESSAGES):
                    await prompt(path)
            finally:
                sys.settrace(None)
            results[path] = _count[0] / MESSAGES
    return results


def main() -> None:
    for path, count in asyncio.run(measure()).items():
        unit = "chunk" if path == "stream" else "turn"
        print(f"{path}: {count:,.0f} instructions per {unit}")


if __name__ == "__main__":
    main()
