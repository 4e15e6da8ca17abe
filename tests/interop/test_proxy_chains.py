"""Proxy chains with peers nobody here wrote, over real pipes: a proxy on the official
TypeScript SDK 2.4.0 (peers/ts_proxy.mjs) in our conductor between our example proxies,
and our example proxies and reference agent under the third-party @thinkwell/conductor
(npm; it initializes proxies with `initialize` + `_meta.proxy` and wraps in
`_proxy/successor/request|notification`). Each runs `acpstack chat` through a whole turn
with tool calls and permissions."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _foreign  # noqa: E402

pytestmark = [
    pytest.mark.timeout(180, func_only=True),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "proxies"
RULES = f"{sys.executable} {EXAMPLES / 'rules.py'}"
AUDIT = f"{sys.executable} {EXAMPLES / 'audit.py'}"
ACPSTACK = [sys.executable, "-m", "acpstack"]
AGENT = [*ACPSTACK, "agent", "--store", ":memory:"]


@pytest.fixture(scope="module")
def node_dir() -> Path:
    found = _foreign.node_sdk_dir()
    assert found is not None, "node is on PATH but npm is not"
    return found


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "README.md").write_text("# demo\n")
    (tmp_path / "AGENTS.md").write_text("Always write the tests first.\n")
    monkeypatch.setenv("AUDIT_FILE", str(tmp_path / "audit.jsonl"))
    return tmp_path


def chat_turn(project: Path, chain: list[str]) -> str:
    done = subprocess.run(
        [*ACPSTACK, "chat", "--approve-all", "-p", "add a line", "--", *chain],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Always write the tests first." in (project / "README.md").read_text()
    records = [json.loads(line) for line in (project / "audit.jsonl").read_text().splitlines()]
    permissions = [r for r in records if r["kind"] == "permission"]
    assert [p["request"]["toolCall"]["title"] for p in permissions][:1] == ["Edit README.md"]
    assert permissions[0]["decision"]["outcome"]["outcome"] == "selected"
    assert any(r["kind"] == "tool_call" for r in records)
    return done.stdout


def test_a_typescript_sdk_proxy_in_our_conductor(node_dir: Path, project: Path) -> None:
    ts_proxy = shlex.join(_foreign.ts_proxy_cmd())
    chain = [*ACPSTACK, "conduct", "--proxy", RULES, "--proxy", ts_proxy, "--proxy", AUDIT]
    out = chat_turn(project, [*chain, "--", *AGENT])
    assert "[ts]" in out  # the TypeScript proxy changed the agent's messages on their way


def test_our_proxies_and_agent_under_the_thinkwell_conductor(node_dir: Path, project: Path) -> None:
    chain = _foreign.thinkwell_conductor_cmd(RULES, AUDIT, shlex.join(AGENT))
    chat_turn(project, chain)
