import asyncio
import os
import sys

from acpstack import Client, spawn_agent
from acpstack.schema import v1 as acp


class PrintingClient(Client):
    async def session_update(self, params: acp.SessionNotification) -> None:
        if isinstance(chunk := params.update, acp.AgentMessageChunk):
            print(getattr(chunk.content, "text", ""), end="", flush=True)


async def main(agent: list[str]) -> None:
    async with spawn_agent(agent, PrintingClient()) as conn:
        await conn.agent.initialize()
        new = await conn.agent.session_new(acp.NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        hi = acp.PromptRequest(session_id=new.session_id, prompt=[acp.TextContent(text="Hello!")])
        print(f"\n[{(await conn.agent.session_prompt(hi)).stop_reason}]")


asyncio.run(main(sys.argv[1:] or [sys.executable, "examples/echo_agent.py"]))
