"""An agent that leaves a process behind: each prompt starts `sleep 600` in a new session
(setsid) through a shell that exits at once, so the sleep is orphaned outside the agent's
process group; its pid is written to the file named by ORPHAN_PID_FILE."""

from __future__ import annotations

import os
import subprocess

from acpstack import Agent, serve_stdio
from acpstack.schema import v1 as acp


class OrphanAgent(Agent):
    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        shell = subprocess.run(
            ["setsid", "sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
            capture_output=True,
            text=True,
            check=True,
        )
        with open(os.environ["ORPHAN_PID_FILE"], "w") as out:
            out.write(shell.stdout.strip())
        await self.client.session_update(
            params.session_id, acp.AgentMessageChunk(content=acp.TextContent(text="left one"))
        )
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    serve_stdio(OrphanAgent())
