"""An acpstack Agent that keeps what `on_message_dropped` told it, for tests over a real pipe.

`_test/dropped` answers with the messages dropped so far; the prompt "big N" sends one
`session/update` whose text has N bytes. What it reads is limited to MAX_MESSAGE_SIZE
bytes per message (the library's default when unset). Warnings go to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import msgspec

from acpstack import Agent, RequestError, run, run_agent
from acpstack.schema import v1 as acp
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, DroppedMessage


class DroppingAgent(Agent):
    def __init__(self) -> None:
        self.dropped: list[dict[str, Any]] = []

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        self.dropped.append(msgspec.to_builtins(dropped))

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1, agent_capabilities=acp.AgentCapabilities()
        )

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        block = params.prompt[0]
        assert isinstance(block, acp.TextContent)
        verb, _, arg = block.text.partition(" ")
        if verb == "big":
            chunk = acp.AgentMessageChunk(content=acp.TextContent(text="x" * int(arg)))
            await self.client.session_update(params.session_id, chunk)
        chunk = acp.AgentMessageChunk(content=acp.TextContent(text="done"))
        await self.client.session_update(params.session_id, chunk)
        return acp.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_test/dropped":
            return {"dropped": self.dropped}
        raise RequestError.method_not_found(method)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    limit = int(os.environ.get("MAX_MESSAGE_SIZE") or DEFAULT_MAX_MESSAGE_SIZE)
    run(run_agent(DroppingAgent(), max_message_size=limit))
