"""The reference agent with the LLM brain, pointed at the fake server (for tests)."""

import os

from acpstack.agent import SqliteSessionStore, serve_stdio
from acpstack.cli._llm import LlmBrain
from acpstack.cli._refagent import ReferenceAgent

brain = LlmBrain(model="fake-model", base_url=os.environ["FAKE_OPENAI_URL"], api_key=os.environ.get("FAKE_KEY"), context_window=1000)
serve_stdio(ReferenceAgent(brain, store=SqliteSessionStore(os.environ["STORE"])))
