"""Benchmark agent on the official Python SDK (`agent-client-protocol`); same prompts as ours."""

from __future__ import annotations

import asyncio
from typing import Any

from acp import run_agent
from acp.schema import (
    AgentMessageChunk,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    TextContentBlock,
)

PAD = "x" * 32


class BenchAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, dict[str, object]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        sid = f"s{len(self.sessions):06d}"
        self.sessions[sid] = {"cwd": cwd, "turns": 0}
        return NewSessionResponse(session_id=sid)

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        command, _, count = prompt[0].text.partition(" ")
        if command == "stream":
            for i in range(int(count)):
                await self.conn.session_update(
                    session_id=session_id,
                    update=AgentMessageChunk(
                        session_update="agent_message_chunk",
                        content=TextContentBlock(type="text", text=f"{i:08d}{PAD}"),
                    ),
                )
        elif command == "read":
            for _ in range(int(count)):
                await self.conn.read_text_file(session_id=session_id, path="/bench/file.txt")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **_: Any) -> None:
        pass


if __name__ == "__main__":
    asyncio.run(run_agent(BenchAgent()))
