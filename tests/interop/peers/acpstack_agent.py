"""The interop scenario agent built on acpstack (same script as the SDK peer agents)."""

from __future__ import annotations

import asyncio

from acpstack import RequestError
from acpstack.agent import MemorySessionStore, SessionAgent, Turn, serve_stdio
from acpstack.schema import v1 as acp

OPTIONS = [
    acp.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    acp.PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
    acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    acp.PermissionOption(option_id="reject-always", name="Always reject", kind="reject_always"),
]


class InteropAgent(SessionAgent):
    name = "acpstack-agent"

    async def prompt(self, turn: Turn) -> str:
        verb, _, rest = turn.text.partition(" ")
        say = turn.session.send
        try:
            if verb == "stream":
                for i in range(1, int(rest) + 1):
                    await say(
                        acp.AgentMessageChunk(content=acp.TextContent(text=f"chunk-{i:08d} "))
                    )
            elif verb == "permission":
                await say(
                    acp.ToolCall(
                        tool_call_id="call-1", title="Edit file", kind="edit", status="pending"
                    )
                )
                tool = acp.ToolCallUpdate(tool_call_id="call-1", title="Edit file", kind="edit")
                answer = await turn.client.session_request_permission(
                    acp.RequestPermissionRequest(
                        session_id=turn.session.session_id, tool_call=tool, options=OPTIONS
                    )
                )
                outcome = answer.outcome
                if isinstance(outcome, acp.SelectedPermissionOutcome):
                    await say(
                        acp.AgentMessageChunk(
                            content=acp.TextContent(
                                text=f"permission: selected {outcome.option_id}"
                            )
                        )
                    )
                    status = "completed" if outcome.option_id.startswith("allow") else "failed"
                    await say(acp.SessionUpdateToolCallUpdate(tool_call_id="call-1", status=status))
                else:
                    await say(
                        acp.AgentMessageChunk(content=acp.TextContent(text="permission: cancelled"))
                    )
                    await say(
                        acp.SessionUpdateToolCallUpdate(tool_call_id="call-1", status="failed")
                    )
                    return "cancelled"
            elif verb == "read":
                content = await turn.read_file(rest)
                await say(acp.AgentMessageChunk(content=acp.TextContent(text=f"read: {content}")))
            elif verb == "write":
                path, _, text = rest.partition(" ")
                await turn.write_file(path, text)
                await say(acp.AgentMessageChunk(content=acp.TextContent(text=f"wrote: {path}")))
            elif verb == "wait":
                await say(acp.AgentMessageChunk(content=acp.TextContent(text="waiting")))
                await asyncio.Event().wait()  # until session/cancel cancels the turn
            else:
                await say(acp.AgentMessageChunk(content=acp.TextContent(text=f"echo: {turn.text}")))
        except RequestError as err:
            await say(
                acp.AgentMessageChunk(
                    content=acp.TextContent(text=f"error: {err.code} {err.message}")
                )
            )
        return "end_turn"


if __name__ == "__main__":
    serve_stdio(InteropAgent(store=MemorySessionStore()))
