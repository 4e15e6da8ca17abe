"""The chain the real-agent tests put in front of an agent: `acpstack conduct` with the
two example proxies, rules first, then audit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
RULES = f"{PY} {ROOT / 'examples' / 'proxies' / 'rules.py'}"
AUDIT = f"{PY} {ROOT / 'examples' / 'proxies' / 'audit.py'}"
CONDUCT = [PY, "-m", "acpstack", "conduct", "--proxy", RULES, "--proxy", AUDIT, "--"]


def chat_turn(project: Path, chain: list[str], timeout: float = 80) -> list[dict[str, Any]]:
    """`acpstack chat -p "add a line"` through `chain` in `project` (see conftest.py's
    `project`): the turn succeeds and the agent saw the rules (the scripted agent adds
    them to the README); the audit file's records."""
    done = subprocess.run(
        [PY, "-m", "acpstack", "chat", "--approve-all", "-p", "add a line", "--", *chain],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    assert "Always write the tests first." in (project / "README.md").read_text()
    return [json.loads(line) for line in (project / "audit.jsonl").read_text().splitlines()]


#: The `acpstack check` cases a chain of the example proxies once failed (answers
#: overtaking the updates before them through an awaiting update hook; lines of other
#: shapes getting the wrong error codes).
CHECKS = ("prompt.no-late-updates", "session.load", "robust.not-an-object", "robust.wrong-jsonrpc")


async def check_chain(project: Path, chain: list[str]) -> dict[str, Any]:
    """Each of `CHECKS` run against `chain` (an agent's command line) in `project`: its
    verdict by case id."""
    from acpstack.conformance import AgentTarget, CheckOptions, check_agent

    options = CheckOptions(timeout=15.0, settle=0.3, eof_grace=3.0, only=CHECKS)
    report = await check_agent(AgentTarget(command=tuple(chain), cwd=project), options)
    return {r.id: r.verdict for r in report.results}
