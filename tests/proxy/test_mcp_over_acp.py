"""A tool a proxy offers over MCP-over-ACP, used by the reference agent through a
conductor: natively (the agent advertises `mcpCapabilities.acp` with --unstable) and
through the conductor's stdio bridge (without --unstable the agent only runs stdio MCP
servers, and refuses `acp` ones)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(90)

TOOL_PROXY = f"{sys.executable} {Path(__file__).parent / 'peers' / 'tool_proxy.py'}"
ACPSTACK = [sys.executable, "-m", "acpstack"]


@pytest.mark.parametrize("agent_flags", [[], ["--unstable"]], ids=["stdio-bridge", "native"])
def test_the_agent_calls_a_tool_the_proxy_offers(tmp_path: Path, agent_flags: list[str]) -> None:
    chain = [*ACPSTACK, "conduct", f"--proxy={TOOL_PROXY}", "--", *ACPSTACK, "agent"]
    done = subprocess.run(
        [*ACPSTACK, "chat", "--approve-all", "-p", '/mcp tools shout {"text": "hello"}', "--"]
        + [*chain, "--store", ":memory:", *agent_flags],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert done.returncode == 0, done.stderr
    assert "HELLO!" in done.stdout, done.stdout + done.stderr
