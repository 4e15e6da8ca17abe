"""claude-agent-acp and gemini-cli through `acpstack conduct` with both example proxies
(rules in front, audit behind it), driven by `acpstack chat`, against a scripted model
server on 127.0.0.1 (tests/interop/fake_models.py) instead of their vendors' hosted APIs:

- claude-agent-acp (npm, the version of the registry snapshot) runs Claude Code, which
  takes ANTHROPIC_BASE_URL and any ANTHROPIC_API_KEY; the variables below keep it from
  other traffic. As root, Claude Code refuses to start unless IS_SANDBOX is set.
- gemini-cli (npm, `--acp`) takes GOOGLE_GEMINI_BASE_URL (plain http is allowed for
  127.0.0.1) with GEMINI_API_KEY; a settings file in the test's HOME turns off usage
  statistics and updates.

A text turn (the model received the rules the proxy added) and a tool turn (the model
calls the agent's own shell tool once: the user approves, the command runs, the audit
file holds the tool call and the permission decision). Both agents run the command
themselves, not in a client terminal, so the audit has no `command` record here.
Skipped, with the reason, when node/npm is missing or the npm install fails.
The first run installs both agents (25-40 s here); later the four tests take about 10 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(600)  # the first run installs both agents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "interop"))
import _foreign  # noqa: E402
from fake_models import FakeModels  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _example_chain import CONDUCT, PY  # noqa: E402

# What the rules proxy adds to a prompt; the agents themselves never read AGENTS.md aloud.
ADDED_RULES = "Project rules (AGENTS.md):\nAlways write the tests first."
# `touch` is not on Claude Code's list of read-only commands, so it asks permission.
TOOL_PROMPT = "RUN: touch tool-was-here"


def _claude(models: FakeModels, home: Path) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": models.url,
        "ANTHROPIC_API_KEY": "sk-offline-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "IS_SANDBOX": "1",
    }


def _gemini(models: FakeModels, home: Path) -> dict[str, str]:
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return {
        "GOOGLE_GEMINI_BASE_URL": models.url,
        "GEMINI_API_KEY": "offline-test",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }


AGENTS: dict[str, tuple[Callable[[], Path | None], list[str], Callable[..., dict[str, str]]]] = {
    "claude-agent-acp": (_foreign.claude_agent_script, [], _claude),
    "gemini-cli": (_foreign.gemini_cli_script, ["--acp"], _gemini),
}


class Run:
    """One agent behind the chain, with its model server and a project directory."""

    def __init__(self, project: Path, models: FakeModels, agent: list[str], env: dict[str, str]):
        self.project, self.models, self.agent, self.env = project, models, agent, env

    def chat(self, prompt: str) -> list[dict[str, Any]]:
        """One headless turn through the chain; the JSON lines of `acpstack chat --json`."""
        done = subprocess.run(
            [PY, "-m", "acpstack", "chat", "--json", "--approve-all", "--timeout", "120"]
            + ["-p", prompt, "--", *CONDUCT, *self.agent],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert lines[-1]["stopReason"] == "end_turn"
        return lines

    def audit(self) -> list[dict[str, Any]]:
        text = (self.project / "audit.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(params=sorted(AGENTS))
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Run]:
    install, args, configure = AGENTS[request.param]
    if not _foreign.node_available():
        pytest.skip("node/npm not found")
    try:
        script = install()
    except _foreign.ForeignInstallError as exc:
        pytest.skip(f"{request.param} could not be installed: {str(exc)[:500]}")
    assert script is not None
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "AGENTS.md").write_text("Always write the tests first.\n")
    with FakeModels() as models:
        env = {**os.environ, "HOME": str(home), "AUDIT_FILE": str(project / "audit.jsonl")}
        env.update(configure(models, home))
        yield Run(project, models, [str(script), *args], env)


def said(lines: list[dict[str, Any]]) -> str:
    """The agent's message text of the turn."""
    return "".join(
        update["content"].get("text", "")
        for line in lines
        if line.get("message", {}).get("method") == "session/update"
        and (update := line["message"]["params"]["update"])["sessionUpdate"]
        == "agent_message_chunk"
    )


def test_text_turn_the_model_gets_the_rules(run: Run) -> None:
    text = said(run.chat("hello through the chain"))
    assert "echo: " in text and "hello through the chain" in text
    assert run.models.model_calls(), run.models.requests
    assert run.models.received(ADDED_RULES)
    # Nothing else reached the server but Claude Code's reachability check.
    calls = run.models.model_calls()
    others = {(r["method"], r["path"]) for r in run.models.requests if r not in calls}
    assert others <= {("GET", "/api/hello")}


def test_tool_turn_is_audited(run: Run) -> None:
    lines = run.chat(TOOL_PROMPT)
    assert lines[-1]["permissions"]["approved"] == 1
    assert (run.project / "tool-was-here").exists()  # the command really ran
    assert "tool said:" in said(lines)  # and the model answered after its result
    records = run.audit()
    permission = next(r for r in records if r["kind"] == "permission")
    assert permission["decision"]["outcome"]["outcome"] == "selected"
    calls = [r["call"] for r in records if r["kind"] in ("tool_call", "tool_call_update")]
    assert any(c.get("title") == "touch tool-was-here" for c in calls)
    assert any(c.get("status") == "completed" for c in calls)
