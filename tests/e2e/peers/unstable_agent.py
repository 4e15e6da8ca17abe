"""A SessionAgent on stdio with unstable methods on: providers, auth, MCP over ACP, and a
prompt that uses the notice, compaction and elicitation helpers (driven by its text)."""

from __future__ import annotations

import sys
from typing import Any

from acpstack.agent import MemorySessionStore, SessionAgent, Turn, serve_stdio
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu


class Providers:
    def __init__(self) -> None:
        self.current: dict[str, Any] = {"main": ("openai", "http://127.0.0.1:1/v1")}

    def list_providers(self) -> list[acpu.ProviderInfo]:
        return [
            acpu.ProviderInfo(
                provider_id=pid,
                supported=["openai"],
                required=False,
                current=acpu.ProviderCurrentConfig(api_type=cur[0], base_url=cur[1])
                if cur
                else None,
            )
            for pid, cur in self.current.items()
        ]

    def set_provider(
        self, provider_id: str, api_type: str, base_url: str, headers: dict[str, str]
    ) -> None:
        if provider_id not in self.current:
            raise ValueError(f"unknown provider {provider_id}")
        self.current[provider_id] = (api_type, base_url)

    def disable_provider(self, provider_id: str) -> None:
        self.current[provider_id] = None


class UnstableAgent(SessionAgent):
    async def prompt(self, turn: Turn) -> acp.StopReason:
        text = turn.text
        if text == "notice":
            await turn.notice("Heads up", "something happened", severity="warning")
        elif text == "compact":
            compaction = await turn.compaction()
            await compaction.chunk("short summary")
            await compaction.complete()
        elif text == "form":
            answer = await turn.elicit_form(
                "Your name?",
                {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            )
            await turn.say(f"{answer.action}:{answer.content.get('name')}")
        elif text == "system":
            await turn.say(str(turn.session.system_prompt))
        elif text.startswith("mcp "):
            assert turn.session.mcp is not None
            tools = await turn.session.mcp.list_tools()
            result = await turn.session.mcp.call_tool(
                tools[0].server, tools[0].name, {"text": text[4:]}
            )
            await turn.say(f"tools={[t.name for t in tools]} result={result.text}")
        else:
            await turn.say(f"echo: {text}")
        return "end_turn"


if __name__ == "__main__":
    agent = UnstableAgent(
        store=MemorySessionStore(),
        mcp=True,
        providers=Providers(),
        auth_methods=[acp.AuthMethodAgent(id="key", name="API key")]
        if "--auth" in sys.argv
        else (),
    )
    serve_stdio(agent, unstable=True)
