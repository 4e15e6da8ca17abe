"""Benchmark agent on acpstack's public API (full validation, nothing skipped).

Prompts: "stream N" sends N 40-byte message chunks, "read N" makes N sequential
fs/read_text_file calls, anything else answers at once. Each session keeps a small record.
"""

from __future__ import annotations

from acpstack import Agent, serve_stdio
from acpstack.schema import v1 as acp

PAD = "x" * 32


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
        command, _, count = (block.text if isinstance(block, acp.TextContent) else "").partition(
            " "
        )
        if command == "stream":
            for i in range(int(count)):
                await self.client.session_update(
                    sid, acp.AgentMessageChunk(content=acp.TextContent(text=f"{i:08d}{PAD}"))
                )
        elif command == "read":
            for _ in range(int(count)):
                await self.client.fs_read_text_file(
                    acp.ReadTextFileRequest(session_id=sid, path="/bench/file.txt")
                )
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    serve_stdio(BenchAgent())
