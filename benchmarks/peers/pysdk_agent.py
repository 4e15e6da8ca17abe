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
        command, *args = prompt[0].text.split()
        if command == "stream":
            pad = "x" * (int(args[1]) - 8 if len(args) > 1 else 32)
            for i in range(int(args[0])):
                await self.conn.session_update(
                    session_id=session_id,
                    update=AgentMessageChunk(
                        session_update="agent_message_chunk",
                        content=TextContentBlock(type="text", text=f"{i:08d}{pad}"),
                    ),
                )
        elif command == "read":
            size = int(args[1]) if len(args) > 1 else None
            for _ in range(int(args[0])):
                answer = await self.conn.read_text_file(
                    session_id=session_id, path="/bench/file.txt"
                )
                if size is not None and len(answer.content) != size:
                    raise ValueError(f"read {len(answer.content)} characters, not {size}")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **_: Any) -> None:
        pass


if __name__ == "__main__":
    asyncio.run(run_agent(BenchAgent()))
