import asyncio
import os
import sys

from acpstack import Client, spawn_agent
from acpstack.schema import v1 as acp


class PrintingClient(Client):
    async def session_update(self, params: acp.SessionNotification) -> None:
        if isinstance(params.update, acp.AgentMessageChunk) and isinstance(params.update.content, acp.TextContent):
            print(params.update.content.text, end="", flush=True)

async def main(agent: list[str]) -> None:
    async with spawn_agent(agent, PrintingClient()) as conn:
        await conn.agent.initialize()
        session = await conn.agent.session_new(acp.NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        reply = await conn.agent.session_prompt(acp.PromptRequest(session_id=session.session_id, prompt=[acp.TextContent(text="Hello!")]))
        print(f"\n[{reply.stop_reason}]")
asyncio.run(main(sys.argv[1:] or [sys.executable, "examples/echo_agent.py"]))
