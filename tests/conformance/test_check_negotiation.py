"""`acpstack check agent`'s version negotiation cases (protocol 1, the v2 draft, and a
version nobody speaks yet) against acpstack's agent, the TypeScript SDK 2.4.0's v2 agent
alone and behind its protocol router (v1+v2, v1 only, v2 only), and agents answering
`initialize` wrongly on purpose (tests/conformance/peers/negotiation_agent.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from acpstack.conformance import AgentTarget, CheckOptions, Report, check_agent

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "interop"))
import _foreign  # noqa: E402

pytestmark = pytest.mark.timeout(120, func_only=True)
CASES = ("init.protocol-v1", "init.protocol-v2", "init.protocol-future")
OPTIONS = CheckOptions(timeout=8.0, settle=0.2, eof_grace=2.0, only=CASES)
PEER = HERE / "peers" / "negotiation_agent.py"


async def check(*command: str) -> Report:
    return await check_agent(AgentTarget(command=command), OPTIONS)


def outcomes(report: Report) -> dict[str, tuple[str, str]]:
    """case -> (verdict, message)"""
    return {r.id: (r.verdict.value, r.message) for r in report.results}


def verdicts(report: Report) -> dict[str, str]:
    return {r.id: r.verdict.value for r in report.results}


ANSWERED_2 = ("pass", "answered 2")
REFUSED_1 = (
    "pass",
    "answered -32022 {requested: 1, supported: [2]}: it speaks no version at or below 1",
)
FUTURE_2 = ("pass", "answered 2, a version it speaks below the unknown 99")


async def test_acpstack_agent_negotiates_every_version(tmp_path: Path) -> None:
    report = await check(sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s"))
    assert outcomes(report) == {
        "init.protocol-v1": ("pass", "answered 1"),
        "init.protocol-v2": ANSWERED_2,
        "init.protocol-future": FUTURE_2,
    }
    assert report.exit_code == 0


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # the v2 app alone, and its router with only the v2 app: a v2-only agent
        ("v2", {"init.protocol-v1": REFUSED_1}),
        ("router-v2", {"init.protocol-v1": REFUSED_1}),
        # the router with both apps
        ("router", {"init.protocol-v1": ("pass", "answered 1")}),
        # the router with only the v1 app: a v2 request is downgraded to v1
        (
            "router-v1",
            {
                "init.protocol-v1": ("pass", "answered 1"),
                "init.protocol-v2": ("pass", "answered 1: negotiated down to a version it speaks"),
                "init.protocol-future": (
                    "pass",
                    "answered 1, a version it speaks below the unknown 99",
                ),
            },
        ),
    ],
)
async def test_the_typescript_sdk_v2_agent_and_its_router(
    mode: str, expected: dict[str, tuple[str, str]]
) -> None:
    node_dir = _foreign.node_sdk_dir()
    assert node_dir is not None, "node is on PATH but npm is not"
    script = _foreign._node_script(_foreign.PEERS_DIR / "ts_v2_agent.mjs")
    report = await check(_foreign._node(), str(script), "--mode", mode)
    wanted = {"init.protocol-v2": ANSWERED_2, "init.protocol-future": FUTURE_2, **expected}
    assert outcomes(report) == wanted
    assert report.exit_code == 0


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("v2-only", {"init.protocol-v1": "pass", "init.protocol-v2": "pass"}),
        ("no-data", {"init.protocol-v1": "fail", "init.protocol-v2": "pass"}),
        ("wrong-requested", {"init.protocol-v1": "fail", "init.protocol-v2": "pass"}),
        ("lying", {"init.protocol-v1": "fail", "init.protocol-v2": "fail"}),
        ("newer-to-v1", {"init.protocol-v1": "warn", "init.protocol-v2": "pass"}),
        ("v2-in-v1-shape", {"init.protocol-v1": "warn", "init.protocol-v2": "fail"}),
    ],
)
async def test_each_answer_gets_its_verdict(mode: str, expected: dict[str, str]) -> None:
    report = await check(sys.executable, str(PEER), mode)
    future = "fail" if mode in ("lying", "v2-in-v1-shape") else "pass"
    assert verdicts(report) == {**expected, "init.protocol-future": future}
    assert report.exit_code == (1 if "fail" in verdicts(report).values() else 0)


async def test_failures_say_what_was_expected_and_show_the_answer() -> None:
    report = await check(sys.executable, str(PEER), "lying")
    v1 = next(r for r in report.results if r.id == "init.protocol-v1")
    assert v1.message == (
        "answered -32022, yet lists 1 as supported, at or below the 1 requested: "
        "it must answer with 1"
    )
    assert v1.expected.startswith("protocolVersion 1, or -32022 {requested: 1, supported")
    assert v1.got[0] == "-> initialize with protocolVersion 1, in v1's shape"
    assert '"supported":[1,2]' in v1.got[1]
    assert "-32022" in v1.rule.text and "v2/initialization" in v1.rule.source
    report = await check(sys.executable, str(PEER), "v2-in-v1-shape")
    v2 = next(r for r in report.results if r.id == "init.protocol-v2")
    assert v2.message == "answered 2, but not in v2's shape"
    assert v2.got[0] == "v2 $defs/InitializeResponse at $: 'info' is a required property"
    report = await check(sys.executable, str(PEER), "no-data")
    v1 = next(r for r in report.results if r.id == "init.protocol-v1")
    assert "UnsupportedProtocolVersionErrorData" in "\n".join(v1.got)


async def test_a_v2_only_agent_skips_the_v1_cases_and_says_why() -> None:
    # session.new shares the group's connection; the others open their own
    only = ("init", "session.new", "cancel.session-cancel", "caps.client-gates")
    options = CheckOptions(timeout=8.0, settle=0.2, eof_grace=2.0, only=only)
    report = await check_agent(AgentTarget(command=(sys.executable, str(PEER))), options)
    result = {r.id: r for r in report.results}
    assert result["init.protocol-v1"].verdict.value == "pass"
    for case in ("session.new", "init.before-initialize", "init.eof-exit", *only[2:]):
        skipped = result[case]
        assert skipped.verdict.value == "skip", case
        assert "does not speak protocol version 1 (-32022)" in skipped.message, case
