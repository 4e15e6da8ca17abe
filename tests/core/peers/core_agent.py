"""A plain acpstack Agent for runtime tests: each prompt text selects a behaviour."""

from __future__ import annotations

import asyncio
import os
import sys

from acpstack import Agent, RequestError, serve_stdio
from acpstack.schema import v1 as acp


class CoreAgent(Agent):
    def __init__(self) -> None:
        self.cancelled_requests = 0

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        print("noise from initialize")  # must land on stderr, never on the wire
        return acp.InitializeResponse(
            protocol_version=1, agent_capabilities=acp.AgentCapabilities()
        )

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=os.environ.get("SESSION_ID") or f"s-{os.getpid()}")

    async def wait_for_cancel(self, what: str) -> None:
        """Tell the client we are waiting (`_test/started`), wait until cancelled, and tell
        it that the cancellation arrived (`_test/cancelled`): tests wait on these notices."""
        await self.client.ext_notification("_test/started", {"what": what})
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled_requests += 1
            await self.client.ext_notification("_test/cancelled", {"what": what})
            raise

    async def say(self, sid: str, text: str) -> None:
        await self.client.session_update(
            sid, acp.AgentMessageChunk(content=acp.TextContent(text=text))
        )

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        block = params.prompt[0]
        assert isinstance(block, acp.TextContent)
        verb, _, arg = block.text.partition(" ")
        sid = params.session_id
        if verb == "stream":
            for i in range(int(arg)):
                await self.say(sid, f"{i:08d}")
        elif verb == "hang":
            await self.wait_for_cancel(verb)
        elif verb == "exit":
            sys.stderr.write("fatal: the agent is going away\n")
            sys.stderr.flush()
            os._exit(int(arg or 3))
        elif verb == "boom":
            raise ValueError("secret-detail")
        elif verb == "ask":  # reverse requests while the prompt is pending
            read = await self.client.fs_read_text_file(
                acp.ReadTextFileRequest(session_id=sid, path=arg)
            )
            tool = acp.ToolCallUpdate(tool_call_id="t1", title="Do it")
            options = [acp.PermissionOption(option_id="ok", name="OK", kind="allow_once")]
            answer = await self.client.session_request_permission(
                acp.RequestPermissionRequest(session_id=sid, tool_call=tool, options=options)
            )
            outcome = (
                "selected"
                if isinstance(answer.outcome, acp.SelectedPermissionOutcome)
                else "cancelled"
            )
            await self.say(sid, f"{read.content}|{outcome}")
        elif verb == "stderr":
            for i in range(int(arg)):
                sys.stderr.write(f"log line {i} " + "x" * 100 + "\n")
            await self.say(sid, "done")
        elif verb == "longline":  # one stderr line of `arg` bytes
            sys.stderr.write("y" * int(arg) + "\n")
            sys.stderr.flush()
            await self.say(sid, "done")
        elif verb == "cancelled-count":
            await self.say(sid, str(self.cancelled_requests))
        return acp.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: object) -> object:
        if method == "_test/echo":
            return params
        if method == "_test/call_client":
            assert isinstance(params, dict)
            return await self.client.ext_method("_test/echo", params)
        if method == "_test/slow":
            await self.wait_for_cancel(method)
        if method == "_test/catch_cancel":
            try:
                await self.wait_for_cancel(method)
            except asyncio.CancelledError:
                return {"partial": True}
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: object) -> None:
        if method == "_test/notify":
            assert isinstance(params, dict)
            await self.client.ext_notification("_test/notified", params)


if __name__ == "__main__":
    if os.environ.get("IGNORE_SIGTERM"):
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    serve_stdio(CoreAgent())
