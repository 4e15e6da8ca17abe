"""An acpstack agent that drives the client's real resources, one action per prompt."""

from __future__ import annotations

import os
import sys
import uuid

from acpstack import Agent, RequestError, serve_stdio
from acpstack.schema import v1 as acp

OPTIONS = [
    acp.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    acp.PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
    acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    acp.PermissionOption(option_id="reject-always", name="Always reject", kind="reject_always"),
]
# Two options share an id: whatever the client answered could mean allow.
AMBIGUOUS_OPTIONS = [
    acp.PermissionOption(option_id="go", name="Allow", kind="allow_once"),
    acp.PermissionOption(option_id="go", name="Reject", kind="reject_once"),
]


class ScenarioAgent(Agent):
    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1, agent_capabilities=acp.AgentCapabilities()
        )

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=uuid.uuid4().hex)

    async def say(self, session_id: str, text: str) -> None:
        await self.client.session_update(
            session_id, acp.AgentMessageChunk(content=acp.TextContent(text=text))
        )

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        sid = params.session_id
        block = params.prompt[0]
        assert isinstance(block, acp.TextContent)
        verb, _, rest = block.text.partition(" ")
        try:
            if verb == "read":
                result = await self.client.fs_read_text_file(
                    acp.ReadTextFileRequest(session_id=sid, path=rest)
                )
                await self.say(sid, result.content)
            elif verb == "write":
                path, _, text = rest.partition(" ")
                await self.client.fs_write_text_file(
                    acp.WriteTextFileRequest(session_id=sid, path=path, content=text)
                )
                await self.say(sid, "written")
            elif verb == "build":
                # A "build" printing ~200 KB to stdout and stderr, under a 1,000-byte limit.
                script = "import sys\nfor i in range(4000):\n    print('line', i, 'é' * 20, file=sys.stderr if i % 2 else sys.stdout)\nsys.exit(3)"
                created = await self.client.terminal_create(
                    acp.CreateTerminalRequest(
                        session_id=sid,
                        command=sys.executable,
                        args=["-c", script],
                        output_byte_limit=1000,
                    )
                )
                tid = created.terminal_id
                await self.client.session_update(
                    sid,
                    acp.ToolCall(
                        tool_call_id="build",
                        title="Build",
                        kind="execute",
                        content=[acp.Terminal(terminal_id=tid)],
                    ),
                )
                exit_status = await self.client.terminal_wait_for_exit(
                    acp.WaitForTerminalExitRequest(session_id=sid, terminal_id=tid)
                )
                output = await self.client.terminal_output(
                    acp.TerminalOutputRequest(session_id=sid, terminal_id=tid)
                )
                await self.client.terminal_release(
                    acp.ReleaseTerminalRequest(session_id=sid, terminal_id=tid)
                )
                await self.say(
                    sid,
                    f"exit={exit_status.exit_code} truncated={output.truncated} bytes={len(output.output.encode())} last={output.output.splitlines()[-1]}",
                )
            elif verb in ("permission", "permission-ambiguous"):
                tool = acp.ToolCallUpdate(tool_call_id="edit-1", title="Edit main.py", kind="edit")
                options = OPTIONS if verb == "permission" else AMBIGUOUS_OPTIONS
                answer = await self.client.session_request_permission(
                    acp.RequestPermissionRequest(session_id=sid, tool_call=tool, options=options)
                )
                outcome = answer.outcome
                if isinstance(outcome, acp.CancelledRequestPermissionOutcome):
                    await self.say(sid, "permission: cancelled")
                    return acp.PromptResponse(stop_reason="cancelled")
                await self.say(sid, f"permission: {outcome.option_id}")
            elif verb == "crash":
                print("about to crash: boom", file=sys.stderr, flush=True)
                os._exit(5)
        except RequestError as err:
            await self.say(sid, f"error {err.code}: {err.message} {err.data}")
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    serve_stdio(ScenarioAgent())
