"""A SessionAgent whose prompts are commands, for the runtime tests.

The store is the SQLite file (or the `postgresql://` URL) named by SESSION_AGENT_DB;
SESSION_AGENT_AUTH=1 turns on an
agent-kind auth method that accepts only after `authenticate`.
"""

from __future__ import annotations

import asyncio
import os

from acpstack.agent import SessionAgent, Turn, open_store, serve_stdio
from acpstack.schema import v1 as acp


class CommandAgent(SessionAgent):
    name = "session-test-agent"

    async def prompt(self, turn: Turn) -> str:
        command, _, arg = turn.text.partition(" ")
        if command == "burst":  # burst N [delay]: N numbered chunks
            count, _, delay = arg.partition(" ")
            for i in range(int(count)):
                await turn.say(f"{i:08d} chunk")
                if delay:
                    await asyncio.sleep(float(delay))
        elif command == "title":
            await self.set_title(turn.session, arg)
        elif command == "permission":
            tool = await turn.start_tool("Edit a file", kind="edit")
            decision = await turn.request_permission(tool)
            await turn.say(f"decision={decision.decision}")
        elif command == "terminal":
            tool = await turn.start_tool("sleep", kind="execute")
            await turn.say("started")
            result = await turn.run_command("sleep", [arg or "30"], tool=tool)
            await turn.say(f"exit={result.exit_code}")
        elif command == "stream":  # streams until cancelled
            i = 0
            while True:
                await turn.say(f"{i:08d} stream")
                i += 1
                await asyncio.sleep(0.005)
        elif command == "raise-on-cancel":
            try:
                await turn.say("waiting")
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                raise ValueError("cleanup failed") from None
        elif command == "fail":
            raise RuntimeError("the model exploded")
        elif command == "slow":
            await turn.say("slow")
            await asyncio.sleep(float(arg or "1"))
        else:
            await turn.say(f"echo: {turn.text}")
        return "end_turn"


def main() -> None:
    auth = (
        [acp.AuthMethodAgent(id="key", name="API key")]
        if os.environ.get("SESSION_AGENT_AUTH") == "1"
        else []
    )
    verbose = acp.SessionConfigOption(
        id="verbose", name="Verbose", type="boolean", current_value=False
    )
    agent = CommandAgent(
        store=open_store(os.environ["SESSION_AGENT_DB"]),
        modes=[("ask", "Ask"), ("code", "Code")],
        config_options=[verbose],
        auth_methods=auth,
    )
    serve_stdio(agent, unstable=os.environ.get("SESSION_AGENT_UNSTABLE") == "1")


if __name__ == "__main__":
    main()
