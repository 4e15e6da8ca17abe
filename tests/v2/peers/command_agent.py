"""A SessionAgent whose prompts are commands, for the protocol v2 tests.

Environment: V2_AGENT_DB (the SQLite store), V2_AGENT_VERSIONS ("2", "1,2" or "1";
default "1,2"), V2_AGENT_AUTH=1 (an auth method that must be used before sessions).

Commands: `say TEXT`, `permission` (a tool call that asks), `wait` (until cancelled),
`fail` (a RequestError), `busy` (the error of a session another process took over,
as a shared store reports it), `crash` (a bug), `write PATH TEXT` (asks, then writes: the client
offers no file system in v2, so the agent writes itself), `run CMD...` (asks, then runs:
on v2 the client may cancel the command or its tool call), `work` (a tool call whose
work the client may cancel, in `ToolCallHandle.cancellable()`); anything else is echoed.
"""

from __future__ import annotations

import asyncio
import os

from acpstack.agent import (
    SESSION_BUSY,
    SessionAgent,
    SqliteSessionStore,
    Turn,
    diff_content,
    serve_stdio,
)
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError


class CommandAgent(SessionAgent):
    name = "v2-command-agent"

    async def prompt(self, turn: Turn) -> str:
        command, _, arg = turn.text.partition(" ")
        if command == "say":
            await turn.think("thinking")
            await turn.say(arg)
            await turn.plan([("say it", "completed")])
        elif command == "permission":
            tool = await turn.start_tool("Edit a file", kind="edit")
            decision = await turn.request_permission(tool)
            await turn.say(f"decision={decision.decision}")
            if decision.allowed:
                await tool.complete()
            else:
                await tool.fail("not allowed")
        elif command == "wait":
            await turn.say("waiting")
            await asyncio.Event().wait()
        elif command == "fail":
            raise RequestError(-32099, "the model is unavailable", {"reason": "model_error"})
        elif command == "busy":  # what a node that lost the session ends the turn with
            data = {"reason": "session_busy", "sessionId": turn.session.session_id}
            raise RequestError(SESSION_BUSY, "Session is live on another node", data)
        elif command == "crash":
            raise RuntimeError("a bug with a secret in it")
        elif command == "write":
            path, _, text = arg.partition(" ")
            tool = await turn.start_tool(f"Write {path}", kind="edit")
            await tool.progress(content=[diff_content(path, None, text)])
            if (await turn.request_permission(tool)).allowed:
                await turn.write_file(path, text, tool=tool)
                await tool.complete()
                await turn.say(f"wrote {path}")
        elif command == "run":
            parts = arg.split()
            tool = await turn.start_tool(f"Run {arg}", kind="execute")
            if (await turn.request_permission(tool)).allowed:
                result = await turn.run_command(parts[0], parts[1:], tool=tool, timeout=20)
                if result.cancelled:  # (a cancelled tool call stays cancelled)
                    await tool.fail("stopped by the user")
                    await turn.say(f"cancelled signal={result.signal}")
                else:
                    await tool.complete()
                    await turn.say(f"exit={result.exit_code} output={result.output.strip()}")
        elif command == "work":
            tool = await turn.start_tool("Work", status="in_progress")
            async with tool.cancellable():
                try:
                    await turn.say("working")
                    await asyncio.Event().wait()
                finally:
                    await turn.say("cleaned up")
            await turn.say(f"cancelled={tool.cancelled}")
            await tool.complete()  # (stays cancelled)
        else:
            await turn.say(f"echo: {turn.text}")
        return "end_turn"


def main() -> None:
    versions = tuple(int(v) for v in os.environ.get("V2_AGENT_VERSIONS", "1,2").split(","))
    auth = (
        [acp.AuthMethodAgent(id="token", name="Token")] if os.environ.get("V2_AGENT_AUTH") else []
    )
    agent = CommandAgent(
        store=SqliteSessionStore(os.environ["V2_AGENT_DB"]),
        modes=[("code", "Code"), ("ask", "Ask")],
        auth_methods=auth,
    )
    agent.protocol_versions = versions
    serve_stdio(agent)


if __name__ == "__main__":
    main()
