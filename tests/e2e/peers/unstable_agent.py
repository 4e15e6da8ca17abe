"""A SessionAgent on stdio with unstable methods on: providers, auth, MCP over ACP, and a
prompt that uses the turn helpers, driven by its text: `notice`, `compact`, `form`,
`url-open URL` (a URL elicitation, left open), `url-raw URL` (the same request sent past
the capability check), `url-done ID` (`elicitation/complete`), `subagent` (a child session
and a message to it), `subagent-bad` (a state ACP does not define), `system`, `mcp TEXT`
(a tool of the client's MCP server), `mcp-progress TEXT` (its `count` tool, which reports
progress: `mcp/message` notifications from the client), `mcp-raw SERVER_ID METHOD` (one raw
`mcp/message`)."""

from __future__ import annotations

import sys
from typing import Any

from acpstack import RequestError
from acpstack.agent import (
    ClientCapabilityMissing,
    MemorySessionStore,
    SessionAgent,
    Turn,
    serve_stdio,
)
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
        elif text.startswith("url-open "):
            try:
                answer = await turn.elicit_url("Sign in to continue", text.split(" ", 1)[1])
            except ClientCapabilityMissing as exc:
                await turn.say(f"refused: {exc.message}")
                return "end_turn"
            await turn.say(f"{answer.action}:{answer.elicitation_id}")
        elif text.startswith("url-raw "):  # past the capability check, as a careless agent would
            params = acp.CreateElicitationRequest(
                message="Sign in",
                mode="url",
                url=text.split(" ", 1)[1],
                elicitation_id="raw-1",
                session_id=turn.session.session_id,
            )
            try:
                await turn.session.client.connection.request("elicitation/create", params)
            except RequestError as exc:
                await turn.say(f"error {exc.code}: {exc.message}")
        elif text.startswith("url-done "):
            await turn.complete_elicitation(text.split(" ", 1)[1])
            await turn.say("completed")
        elif text == "subagent":
            child = await turn.subagent(title="Researcher", description="reads the code")
            message = await turn.session_message(
                sender_session_id=turn.session.session_id,
                recipient_session_id=child.session_id,
                text="Find the bug. ",
            )
            await message.chunk("Report back.")
            await child.idle("end_turn")
            await child.update(description=None)
            await turn.say(f"child={child.session_id} message={message.message_id}")
        elif text == "subagent-bad":
            try:
                await turn.subagent(state="sleeping")
            except ValueError as exc:
                await turn.say(str(exc))
        elif text.startswith("mcp-raw "):
            _, server_id, method = text.split(" ", 2)
            request = acpu.MessageMcpRequest(server_id=server_id, request_id="r1", method=method)
            try:
                outcome = await turn.session.client.mcp_message(request)
            except RequestError as exc:
                await turn.say(f"error {exc.code}: {exc.message} {exc.data}")
            else:
                await turn.say(f"outcome {outcome}")
        elif text == "system":
            await turn.say(str(turn.session.system_prompt))
        elif text.startswith("mcp-progress "):  # the client's server reports progress
            assert turn.session.mcp is not None
            seen: list[tuple[float, float | None, str | None]] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                seen.append((done, total, message))

            result = await turn.session.mcp.call_tool(
                "tools", "count", {"text": text[13:]}, on_progress=progress
            )
            await turn.say(f"progress={seen} result={result.text}")
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
