"""`acpstack agent`: the reference agent over stdio, with a scripted or an LLM brain."""

from __future__ import annotations

import logging
import os

from acpstack.agent import Session, SessionAgent, SqliteSessionStore, Turn, serve_stdio
from acpstack.cli._brain import Brain
from acpstack.cli._scripted import COMMANDS, ScriptedBrain
from acpstack.schema import v1 as acp

log = logging.getLogger("acpstack.cli")


class ReferenceAgent(SessionAgent):
    name = "acpstack-agent"
    title = "acpstack reference agent"

    def __init__(self, brain: Brain, **kwargs: object) -> None:
        super().__init__(modes=[("code", "Code"), ("ask", "Ask")], **kwargs)  # type: ignore[arg-type]
        self.brain = brain

    async def on_session_start(self, session: Session) -> None:
        commands = [
            acp.AvailableCommand(name=name, description=description, input=acp.UnstructuredCommandInput(hint=hint) if hint else None)
            for name, description, hint in COMMANDS
        ]
        await session.send(acp.AvailableCommandsUpdate(available_commands=commands))

    async def prompt(self, turn: Turn) -> str:
        if turn.session.title is None and turn.text.strip() and not turn.text.startswith("/"):
            await self.set_title(turn.session, turn.text.strip()[:60])
        return await self.brain.respond(turn)


def run_reference_agent(*, model: str | None, base_url: str | None, api_key_env: str, store_path: str | None) -> None:
    brain: Brain
    if model:
        from acpstack.cli._llm import LlmBrain

        key = os.environ.get(api_key_env)
        brain = LlmBrain(model=model, base_url=base_url or "https://api.openai.com/v1", api_key=key)
    else:
        brain = ScriptedBrain()
    store = SqliteSessionStore(store_path or os.environ.get("ACPSTACK_STORE") or None)
    serve_stdio(ReferenceAgent(brain, store=store))
