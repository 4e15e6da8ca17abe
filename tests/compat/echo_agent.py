"""An agent written against the official SDK's API only (run as a subprocess by the tests)."""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "compat"))

from acp import (  # noqa: E402
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.interfaces import Client  # noqa: E402
from acp.schema import AgentCapabilities, Implementation, PermissionOption, ToolCallUpdate  # noqa: E402


class EchoAgent(Agent):
    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kw):
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="echo", version="1"),
        )

    async def new_session(self, cwd, mcp_servers=None, **kw):
        return NewSessionResponse(session_id="s-1")

    async def prompt(self, prompt, session_id, **kw):
        text = "".join(getattr(block, "text", "") for block in prompt)
        if text == "boom":
            raise RequestError.invalid_params({"why": "boom"})
        if text == "tool":
            await self.conn.session_update(session_id, start_tool_call("t1", "Look", kind="read"))
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="t1"),
                options=[PermissionOption(option_id="ok", name="OK", kind="allow_once")],
            )
            outcome = answer.outcome.outcome
            await self.conn.session_update(session_id, update_tool_call("t1", status="completed"))
            text = f"permission: {outcome}"
        for word in text.split():
            await self.conn.session_update(session_id, update_agent_message(text_block(word)))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))
