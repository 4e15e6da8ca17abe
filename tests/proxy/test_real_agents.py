"""Agents nobody here wrote, through `acpstack conduct` with both example proxies (rules in
front, audit behind it), driven by `acpstack chat`: a text turn (the agent saw the rules)
and a tool turn (the audit file holds the tool call, its permission decision and the
command).

- fast-agent (`fast-agent serve --transport acp --model passthrough`, offline: the
  passthrough model echoes its input, or calls the tool a `***CALL_TOOL` prompt names),
  installed on first use like tests/compat/test_fast_agent.py (ACPSTACK_FAST_AGENT names
  another install);
- the agent built on the official TypeScript SDK 2.4.0 (tests/interop/peers), scripted:
  it echoes the first text block and asks permission on `permission`; skipped without node.

claude-agent-acp and gemini-cli, which need a hosted model, run through the same chain
against a scripted model server in test_hosted_agents.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(600)  # the first run installs fast-agent

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "interop"))
import _foreign  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _example_chain import CONDUCT, PY  # noqa: E402

TOOL_PROMPT = '***CALL_TOOL execute {"command": "echo hi-from-tool"}'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "AGENTS.md").write_text("Always write the tests first.\n")
    monkeypatch.setenv("AUDIT_FILE", str(tmp_path / "audit.jsonl"))
    return tmp_path


def fast_agent() -> list[str]:
    script = os.environ.get("ACPSTACK_FAST_AGENT") or str(_foreign.fast_agent_script())
    return [script, "serve", "--transport", "acp", "--model", "passthrough", "-x"]


def chat(project: Path, prompt: str, agent: list[str]) -> list[dict[str, Any]]:
    """One headless turn through the chain; the JSON lines of `acpstack chat --json`."""
    done = subprocess.run(
        [PY, "-m", "acpstack", "chat", "--json", "--approve-all", "--timeout", "90"]
        + ["-p", prompt, "--", *CONDUCT, *agent],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines[-1]["stopReason"] == "end_turn"
    return lines


def said(lines: list[dict[str, Any]]) -> str:
    """The agent's message text of the turn."""
    return "".join(
        update["content"].get("text", "")
        for line in lines
        if line.get("message", {}).get("method") == "session/update"
        and (update := line["message"]["params"]["update"])["sessionUpdate"]
        == "agent_message_chunk"
    )


def audit(project: Path) -> list[dict[str, Any]]:
    text = (project / "audit.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_fast_agent_text_turn_sees_the_rules(project: Path) -> None:
    text = said(chat(project, "hello through the chain", fast_agent()))
    # The passthrough model echoes what it got: the prompt and the rules the proxy added.
    assert "hello through the chain" in text and "Always write the tests first." in text


def test_fast_agent_tool_turn_is_audited(project: Path) -> None:
    lines = chat(project, TOOL_PROMPT, fast_agent())
    assert lines[-1]["permissions"]["approved"] == 1
    records = audit(project)
    kinds = [r["kind"] for r in records]
    assert "permission" in kinds and "tool_call" in kinds
    permission = next(r for r in records if r["kind"] == "permission")
    assert permission["decision"]["outcome"]["outcome"] == "selected"
    assert {"kind": "command", "command": "echo", "args": ["hi-from-tool"]}.items() <= next(
        r for r in records if r["kind"] == "command"
    ).items()
    done = [r for r in records if r["kind"] == "tool_call_update"]
    assert any(r["call"].get("status") == "completed" for r in done)


def test_typescript_sdk_agent_text_and_permission_turns(project: Path) -> None:
    if not _foreign.node_available():
        pytest.skip("node/npm not found")
    agent = _foreign.ts_agent_cmd()
    assert said(chat(project, "hello ts", agent)) == "echo: hello ts"
    lines = chat(project, "permission", agent)
    assert lines[-1]["permissions"]["approved"] == 1
    permission = next(r for r in audit(project) if r["kind"] == "permission")
    assert permission["decision"]["outcome"]["outcome"] == "selected"
