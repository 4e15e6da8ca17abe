"""Bytecode instructions per message on the hot paths: a deterministic measure of the work
acpstack does per message, for comparing changes on a machine too noisy for timings.

An agent and a client in one process over the in-memory transport; the Python code that
runs per message is traced opcode by opcode (the event loop's own Python frames included,
C code not). Three paths, each over 200 messages after a warm-up:

- reverse: the agent calls `fs/read_text_file` on the client (a request each way);
- stream: the agent sends `session/update` chunks (notifications);
- roundtrip: the client sends `session/prompt` and the agent answers at once.

    python -m benchmarks.instructions
"""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

from acpstack import Agent, Client
from acpstack.agent import connect_agent
from acpstack.client import connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair

MESSAGES = 200
CHUNK = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
_count = [0]


def _tracer(frame: FrameType, event: str, arg: Any) -> Any:
    frame.f_trace_opcodes = True
    if event == "opcode":
        _count[0] += 1
    return _tracer


class _Agent(Agent):
    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1, agent_capabilities=acp.AgentCapabilities()
        )

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        block = params.prompt[0]
        path = block.text if isinstance(block, acp.TextContent) else ""
        if path == "reverse":
            for _ in range(MESSAGES):
                await self.client.fs_read_text_file(
                    acp.ReadTextFileRequest(session_id="s", path="/x")
                )
        elif path == "stream":
            for i in range(MESSAGES):
                chunk = acp.AgentMessageChunk(content=acp.TextContent(text=f"{i:08d} {CHUNK}"))
                await self.client.session_update("s", chunk)
        return acp.PromptResponse(stop_reason="end_turn")


class _Client(Client):
    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        return acp.ReadTextFileResponse(content="hello")

    async def session_update(self, params: acp.SessionNotification) -> None:
        return None


async def measure() -> dict[str, float]:
    """Instructions per message for each path."""
    agent_side, client_side = memory_pair()
    agent = connect_agent(_Agent(), agent_side)
    client = connect_client(_Client(), client_side)
    results: dict[str, float] = {}
    async with agent, client.connection:
        fs = acp.FileSystemCapabilities(read_text_file=True)
        await client.agent.initialize(
            acp.InitializeRequest(
                protocol_version=1, client_capabilities=acp.ClientCapabilities(fs=fs)
            )
        )
        await client.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        for path in ("reverse", "stream", "roundtrip"):
            request = acp.PromptRequest(session_id="s", prompt=[acp.TextContent(text=path)])
            await client.agent.session_prompt(request)  # warm-up: lazy decoders are built
            _count[0] = 0
            sys.settrace(_tracer)
            try:
                for _ in range(MESSAGES if path == "roundtrip" else 1):
                    await client.agent.session_prompt(request)
            finally:
                sys.settrace(None)
            results[path] = _count[0] / MESSAGES
    return results


def main() -> None:
    for path, count in asyncio.run(measure()).items():
        print(f"{path}: {count:,.0f} instructions per message")


if __name__ == "__main__":
    main()
