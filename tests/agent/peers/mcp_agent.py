"""A SessionAgent that calls a tool of the session's MCP server during a prompt."""

from __future__ import annotations

import json
import os

from acpstack.agent import MemorySessionStore, SessionAgent, Turn, serve_stdio, text_content


class McpAgent(SessionAgent):
    async def prompt(self, turn: Turn) -> str:
        mcp = turn.session.mcp
        assert mcp is not None
        if turn.text == "tools":
            tools = await mcp.list_tools()
            errors = {name: err.message for name, err in mcp.errors.items()}
            await turn.say(
                json.dumps(
                    {"tools": sorted(f"{t.server}.{t.name}" for t in tools), "errors": errors}
                )
            )
            return "end_turn"
        server, tool_name, args = turn.text.split(" ", 2)
        tool = await turn.start_tool(
            f"{server}.{tool_name}", kind="other", raw_input=json.loads(args)
        )
        result = await mcp.call_tool(server, tool_name, json.loads(args))
        if result.is_error:
            await tool.fail(result.text)
        else:
            await tool.complete(content=[text_content(result.text)])
        await turn.say(f"{'error' if result.is_error else 'result'}: {result.text}")
        return "end_turn"


if __name__ == "__main__":
    serve_stdio(
        McpAgent(
            store=MemorySessionStore(),
            mcp=True,
            mcp_fail_fast=os.environ.get("MCP_FAIL_FAST") == "1",
        )
    )
