"""acpstack agents served remotely by the tests (`acpstack serve --agent THIS_FILE:NAME`).

`ScriptedAgent` answers by the prompt's text, like the foreign peers do:
  permission  -> a chunk "asking", a permission request, a chunk "outcome: <optionId|cancelled>"
  wait        -> a chunk "waiting", then nothing until session/cancel; stopReason "cancelled"
  stream N    -> N chunks "00000000" .. (zero-padded counters)
  anything else -> a chunk "echo: <text>"
`PersistentAgent` keeps sessions in a store shared by every connection of the process,
so a session can be loaded again after a reconnect.
"""

from __future__ import annotations

import asyncio
import os
import uuid

from acpstack import Agent
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.schema import v1 as acp

OPTIONS = [
    acp.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


def _chunk(text: str) -> acp.AgentMessageChunk:
    return acp.AgentMessageChunk(content=acp.TextContent(text=text))


class ScriptedAgent(Agent):
    def __init__(self) -> None:
        self.cancelled: dict[str, asyncio.Event] = {}

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1,
            agent_capabilities=acp.AgentCapabilities(),
            agent_info=acp.Implementation(name="acpstack-scripted", version=str(os.getpid())),
        )

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=f"sess-{uuid.uuid4().hex[:12]}")

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        self.cancelled.setdefault(params.session_id, asyncio.Event()).set()

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        sid = params.session_id
        text = " ".join(b.text for b in params.prompt if isinstance(b, acp.TextContent)).strip()
        say = self.client.session_update
        if text == "permission":
            await say(sid, _chunk("asking"))
            request = acp.RequestPermissionRequest(
                session_id=sid,
                tool_call=acp.ToolCallUpdate(tool_call_id="call-1", title="demo", kind="edit"),
                options=OPTIONS,
            )
            answer = await self.client.session_request_permission(request)
            outcome = (
                answer.outcome.option_id
                if isinstance(answer.outcome, acp.SelectedPermissionOutcome)
                else "cancelled"
            )
            await say(sid, _chunk(f"outcome: {outcome}"))
        elif text == "wait":
            event = self.cancelled.setdefault(sid, asyncio.Event())
            event.clear()
            await say(sid, _chunk("waiting"))
            await event.wait()
            return acp.PromptResponse(stop_reason="cancelled")
        elif text.startswith("stream "):
            for i in range(int(text.split()[1])):
                await say(sid, _chunk(f"{i:08d}"))
        else:
            await say(sid, _chunk(f"echo: {text}"))
        return acp.PromptResponse(stop_reason="end_turn")


STORE = MemorySessionStore()


class PersistentAgent(SessionAgent):
    name = "acpstack-persistent"

    def __init__(self) -> None:
        super().__init__(store=STORE)

    async def prompt(self, turn: Turn) -> str:
        await turn.say(f"echo: {turn.text}")
        return "end_turn"
