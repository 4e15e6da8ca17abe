"""Benchmark agent on acpstack's public API (full validation, nothing skipped).

Prompts: "stream N [SIZE]" sends N message chunks of SIZE characters (default 40: an
8-digit index, then "x"), "read N [SIZE]" makes N sequential fs/read_text_file calls (and,
with SIZE, checks each answer has that many characters), anything else answers at once.
Each session keeps a small record.
"""

from __future__ import annotations

from acpstack import Agent, serve_stdio
from acpstack.schema import v1 as acp


class BenchAgent(Agent):
    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, object]] = {}

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1, agent_info=acp.Implementation(name="acpstack-bench", version="1")
        )

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        sid = f"s{len(self.sessions):06d}"
        self.sessions[sid] = {"cwd": params.cwd, "turns": 0}
        return acp.NewSessionResponse(session_id=sid)

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        sid = params.session_id
        block = params.prompt[0]
        command, *args = (block.text if isinstance(block, acp.TextContent) else "").split()
        if command == "stream":
            pad = "x" * (int(args[1]) - 8 if len(args) > 1 else 32)
            for i in range(int(args[0])):
                await self.client.session_update(
                    sid, acp.AgentMessageChunk(content=acp.TextContent(text=f"{i:08d}{pad}"))
                )
        elif command == "read":
            size = int(args[1]) if len(args) > 1 else None
            for _ in range(int(args[0])):
                answer = await self.client.fs_read_text_file(
                    acp.ReadTextFileRequest(session_id=sid, path="/bench/file.txt")
                )
                if size is not None and len(answer.content) != size:
                    raise ValueError(f"read {len(answer.content)} characters, not {size}")
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    serve_stdio(BenchAgent())
