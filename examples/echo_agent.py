import uuid

from acpstack import Agent, serve_stdio
from acpstack.schema import v1 as acp


class EchoAgent(Agent):
    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=uuid.uuid4().hex)

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        for block in params.prompt:
            if isinstance(block, acp.TextContent):
                chunk = acp.AgentMessageChunk(content=acp.TextContent(text=f"echo: {block.text}"))
                await self.client.session_update(params.session_id, chunk)
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    serve_stdio(EchoAgent())
