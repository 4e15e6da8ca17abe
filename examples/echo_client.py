"""A complete ACP client in 20 lines: start an agent, send one prompt, print the reply."""

import asyncio
import os
import sys

from acpstack import Client, spawn_agent
from acpstack.schema import v1 as acp


class PrintingClient(Client):
    async def session_update(self, params: acp.SessionNotification) -> None:
        if isinstance(params.update, acp.AgentMessageChunk) and isinstance(params.update.content, acp.TextContent):
            print(params.update.content.text, end="", flush=True)


async def main(agent_command: list[str]) -> None:
    async with spawn_agent(agent_command, PrintingClient()) as conn:
        await conn.agent.initialize()
        session = await conn.agent.session_new(acp.NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        prompt = [acp.TextContent(text="Hello, agent!")]
        result = await conn.agent.session_prompt(acp.PromptRequest(session_id=session.session_id, prompt=prompt))
        print(f"\n[{result.stop_reason}]")

asyncio.run(main(sys.argv[1:] or [sys.executable, "examples/echo_agent.py"]))
