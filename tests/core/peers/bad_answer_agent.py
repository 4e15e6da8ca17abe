"""An agent whose handlers answer with values their methods' result types refuse: the
prompt "finished" answers that stop reason, `session/new` in /dict answers a plain dict
with a number for the session id. Everything else is a correct answer."""

from __future__ import annotations

import logging
from typing import Any

from acpstack import Agent, serve_stdio
from acpstack.schema import v1 as acp


class BadAnswers(Agent):
    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def session_new(self, params: acp.NewSessionRequest) -> Any:
        if params.cwd == "/dict":
            return {"sessionId": 42}
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        text = params.prompt[0].text if isinstance(params.prompt[0], acp.TextContent) else ""
        return acp.PromptResponse(stop_reason=text)  # type: ignore[arg-type]


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve_stdio(BadAnswers())
