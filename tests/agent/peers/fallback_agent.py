"""A SessionAgent that reads, writes and runs what each prompt asks, for the fallback tests.

A prompt is one JSON object:

* ``{"op": "read", "path": P, "line"?: N, "limit"?: M}``
* ``{"op": "write", "path": P, "content": TEXT}`` (asks permission first)
* ``{"op": "run", "argv": [...], "cwd"?, "env"?, "timeout"?, "limit"?}`` (asks permission first)
* ``{"op": "elicit"}``: asks the client for a form (a capability most clients lack)
* ``{"op": "fail"}``: starts a tool call, then raises

Each op runs in a tool call (passed to the helper). The result is said as one JSON
message ``{"result": ...}``; an error the helper raises is said as ``{"error": MESSAGE,
"type": NAME}`` and the turn goes on with ``after``, unless the prompt has ``"catch":
false``, which lets the exception end the turn. The store is SQLite in FALLBACK_AGENT_DB;
FALLBACK_POLICY is the `fallback` policy ("local" when unset).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from acpstack.agent import (
    ClientCapabilityMissing,
    SessionAgent,
    SqliteSessionStore,
    Turn,
    serve_stdio,
)
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError


class FallbackAgent(SessionAgent):
    name = "fallback-test-agent"

    async def prompt(self, turn: Turn) -> acp.StopReason:
        request = json.loads(turn.text)
        try:
            result = await self.do(turn, request)
        except (RequestError, ClientCapabilityMissing) as exc:
            if request.get("catch", True) is False:
                raise
            await turn.fail_unfinished(exc.message)  # a refusal failed its tool call already
            await turn.say(json.dumps({"error": exc.message, "type": type(exc).__name__}))
            await turn.say("after")
            return "end_turn"
        await turn.say(json.dumps({"result": result}))
        return "end_turn"

    async def do(self, turn: Turn, request: dict[str, Any]) -> Any:
        op = request["op"]
        if op == "read":
            tool = await turn.start_tool(f"Read {request['path']}", kind="read")
            text = await turn.read_file(
                request["path"], line=request.get("line"), limit=request.get("limit"), tool=tool
            )
            await tool.complete()
            return text
        if op == "write":
            tool = await turn.start_tool(f"Write {request['path']}", kind="edit")
            if not (await turn.request_permission(tool)).allowed:
                await tool.fail("not approved")
                return "not approved"
            await turn.write_file(request["path"], request["content"], tool=tool)
            await tool.complete()
            return "written"
        if op == "run":
            tool = await turn.start_tool(f"Run {request['argv']}", kind="execute")
            if not (await turn.request_permission(tool)).allowed:
                await tool.fail("not approved")
                return "not approved"
            argv = request["argv"]
            result = await turn.run_command(
                argv[0],
                argv[1:],
                cwd=request.get("cwd"),
                env=request.get("env"),
                timeout=request.get("timeout"),
                output_byte_limit=request.get("limit"),
                tool=tool,
            )
            await tool.complete()
            return dataclasses.asdict(result)
        if op == "elicit":
            params = acp.CreateElicitationRequest(
                message="Which one?",
                mode="form",
                session_id=turn.session.session_id,
                requested_schema=acp.ElicitationSchema(),
            )
            return str(await turn.client.elicitation_create(params))
        if op == "fail":
            await turn.start_tool("About to fail", kind="other")
            raise RuntimeError("the author's code broke")
        raise ValueError(f"unknown op {op!r}")


def main() -> None:
    agent = FallbackAgent(
        store=SqliteSessionStore(os.environ["FALLBACK_AGENT_DB"]),
        fallback=os.environ.get("FALLBACK_POLICY", "local"),  # type: ignore[arg-type]
    )
    serve_stdio(agent)


if __name__ == "__main__":
    main()
