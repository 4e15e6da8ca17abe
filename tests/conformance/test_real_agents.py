"""`acpstack check agent` against agents nobody wrote for it: our reference agent, the
official Python and TypeScript SDKs' example agents, and a remote agent over streamable
HTTP and WebSocket. The verdicts asserted here are the ones the docs' results table shows."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from acpstack.conformance import AgentTarget, CheckOptions, Report, Verdict, check_agent

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "interop"))
sys.path.insert(0, str(HERE.parent / "remote"))
import _foreign  # noqa: E402

pytestmark = pytest.mark.timeout(150, func_only=True)
FAST = CheckOptions(timeout=8.0, settle=0.3, eof_grace=3.0, cancel_prompt="wait")


def flagged(report: Report) -> dict[str, str]:
    """The cases that did not simply pass or skip: id -> verdict."""
    return {
        r.id: r.verdict.value for r in report.results if r.verdict in (Verdict.FAIL, Verdict.WARN)
    }


async def test_the_reference_agent_passes(tmp_path: Path) -> None:
    command = (sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db"))
    # "/run sleep 30" makes the offline agent ask for permission: the cancelled turn has a
    # pending permission request (cancel.permission), and nothing else runs meanwhile.
    options = CheckOptions(timeout=8.0, settle=0.3, eof_grace=3.0, cancel_prompt="/run sleep 30")
    report = await check_agent(AgentTarget(command=command), options)
    # Nothing flagged, caps.client-gates included: for a client that offers no files and
    # no terminals, the offline agent does that work itself.
    assert flagged(report) == {}
    verdict = {r.id: r.verdict for r in report.results}
    for case in (
        "session.load",
        "session.resume",
        "session.list",
        "session.modes",
        "cancel.permission",
    ):
        assert verdict[case] == Verdict.PASS, case
    assert report.agent_info is not None and report.agent_info["name"] == "acpstack-agent"


async def test_the_official_python_sdk_agent() -> None:
    command = tuple(_foreign.py_sdk_agent_cmd())
    report = await check_agent(AgentTarget(command=command), FAST)
    assert flagged(report) == {
        # acp 0.12.1 accepts session/new before initialize, and a relative cwd
        "init.before-initialize": "warn",
        "session.absolute-cwd": "warn",
        # it answers no -32700 to invalid JSON, takes jsonrpc "1.0", and dies on `42`
        # (AttributeError: 'int' object has no attribute 'get'): input a client must not
        # send, so robustness warnings, not failures
        "robust.invalid-json": "warn",
        "robust.wrong-jsonrpc": "warn",
        "robust.not-an-object": "warn",
    }
    died = next(r for r in report.results if r.id == "robust.not-an-object")
    assert any("AttributeError" in line for line in died.got)
    assert report.exit_code == 0


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_the_official_typescript_sdk_agent() -> None:
    command = tuple(_foreign.ts_agent_cmd())
    report = await check_agent(AgentTarget(command=command), FAST)
    assert flagged(report) == {
        "session.absolute-cwd": "warn",
        # JavaScript numbers: the id 2**53 + 1 comes back as 2**53
        "robust.request-ids": "warn",
    }
    assert report.exit_code == 0


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_remote_agent_over_url(scheme: str) -> None:
    from _serving import running

    from acpstack.server import AgentServer

    agent = [sys.executable, str(HERE / "peers" / "raw_agent.py")]
    async with running(AgentServer(agent)) as url:
        target = AgentTarget(url=url.replace("http", scheme, 1))
        report = await check_agent(
            target,
            CheckOptions(
                timeout=5.0, settle=0.2, only=("init", "caps", "prompt", "robust", "schema")
            ),
        )
    verdicts = {r.id: r.verdict.value for r in report.results}
    assert flagged(report) == {}
    # byte-level cases need the agent's stdin: over a URL they say so
    assert verdicts["robust.invalid-json"] == "skip"
    assert verdicts["init.eof-exit"] == "skip"
    assert verdicts["prompt.stop-reason"] == "pass"
    assert verdicts["schema.agent-messages"] == "pass"
