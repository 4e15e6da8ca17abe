"""An agent for shutdown tests: a prompt starts a client terminal running a long `sleep`
and waits; it reports (checkpoints, see rendezvous.py) when the terminal runs and when
the turn is cancelled; and it ignores the end of stdin, so only a signal ends it."""

from __future__ import annotations

import asyncio
import time

from rendezvous import checkpoint

from acpstack import Agent, serve_stdio
from acpstack.schema import v1 as acp


class TerminalAgent(Agent):
    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        created = await self.client.terminal_create(
            acp.CreateTerminalRequest(session_id=params.session_id, command="sleep", args=["600"])
        )
        await self.client.session_update(
            params.session_id,
            acp.ToolCall(
                tool_call_id="t1",
                title="sleep 600",
                kind="execute",
                status="in_progress",
                content=[acp.Terminal(terminal_id=created.terminal_id)],
            ),
        )
        checkpoint("terminal", wait=False)
        await asyncio.Event().wait()  # until the client goes away
        return acp.PromptResponse(stop_reason="end_turn")

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        checkpoint("cancelled", wait=False)


if __name__ == "__main__":
    serve_stdio(TerminalAgent())
    while True:  # stdin is closed: carry on regardless, like some real agents do
        time.sleep(3600)
