"""`acpstack agent` (the reference agent, offline script) speaking only protocol v2: a
v2-only agent for `acpstack chat`. Argument: the SQLite store file."""

from __future__ import annotations

import sys

from acpstack.agent import SqliteSessionStore, serve_stdio
from acpstack.cli._refagent import ReferenceAgent
from acpstack.cli._scripted import ScriptedBrain

if __name__ == "__main__":
    agent = ReferenceAgent(ScriptedBrain(), store=SqliteSessionStore(sys.argv[1]))
    agent.protocol_versions = (2,)
    serve_stdio(agent)
