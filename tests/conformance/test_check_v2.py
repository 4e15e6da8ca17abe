"""`acpstack check agent`'s v2 conversation cases (v2.session-new, v2.turn, v2.cancel)
against acpstack's agent, the TypeScript SDK 2.4.0's v2 app, v1-only agents (skipped), and
a raw v2 agent wrong in one way per mode (tests/conformance/peers/v2_turn_agent.py)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from acpstack.conformance import AgentTarget, CheckOptions, Report, check_agent

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "interop"))
import _foreign  # noqa: E402

pytestmark = pytest.mark.timeout(150, func_only=True)
CASES = ("v2.session-new", "v2.turn", "v2.cancel")
OPTIONS = CheckOptions(timeout=3.0, settle=0.2, eof_grace=2.0, only=("v2",), cancel_prompt="wait")
PEER = HERE / "peers" / "v2_turn_agent.py"
NO_V2 = "the agent does not speak protocol v2 (initialize with protocolVersion 2 got "


async def check(*command: str, options: CheckOptions = OPTIONS) -> Report:
    return await check_agent(AgentTarget(command=command), options)


def verdicts(report: Report) -> dict[str, str]:
    return {r.id: r.verdict.value for r in report.results}


def found(report: Report, case_id: str) -> str:
    result = next(r for r in report.results if r.id == case_id)
    return "\n".join([result.message, *result.got])


ALL_PASS = dict.fromkeys(CASES, "pass")


async def test_acpstack_agent_passes_the_v2_cases(tmp_path: Path) -> None:
    agent = (sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db"))
    # "/run sleep 30" asks for permission (held by the checker) and then runs: a turn that
    # lasts until it is cancelled
    options = CheckOptions(
        timeout=8.0, settle=0.2, eof_grace=2.0, only=("v2",), cancel_prompt="/run sleep 30"
    )
    report = await check(*agent, options=options)
    assert verdicts(report) == ALL_PASS
    assert report.results[1].message.startswith("end_turn after ")
    assert report.results[2].message == "cancelled"
    assert report.exit_code == 0


async def test_a_v1_only_agent_skips_them_and_says_why() -> None:
    report = await check(sys.executable, str(HERE / "peers" / "raw_agent.py"))
    assert verdicts(report) == dict.fromkeys(CASES, "skip")
    assert {r.message for r in report.results} == {NO_V2 + "protocolVersion 1)"}
    assert report.exit_code == 0


async def test_the_v2_cases_run_between_cancel_and_robustness() -> None:
    options = CheckOptions(timeout=3.0, settle=0.2, eof_grace=2.0, only=("v2", "cancel"))
    report = await check(sys.executable, str(PEER), options=options)
    groups = [r.group for r in report.results]
    assert groups == ["cancel"] * groups.count("cancel") + ["v2"] * 3


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("correct", ALL_PASS),
        # no idle within the timeout: slow or stuck, not judged
        ("no-idle", {**ALL_PASS, "v2.turn": "warn", "v2.cancel": "warn"}),
        # the stop reason on the idle is a SHOULD
        ("no-stop-reason", {**ALL_PASS, "v2.turn": "warn", "v2.cancel": "warn"}),
        ("late", {**ALL_PASS, "v2.turn": "fail", "v2.cancel": "fail"}),
        ("ignores-cancel", {**ALL_PASS, "v2.cancel": "warn"}),
        ("bad-ack", {**ALL_PASS, "v2.turn": "fail", "v2.cancel": "fail"}),
        ("stranger", {**ALL_PASS, "v2.turn": "fail", "v2.cancel": "fail"}),
        ("no-running", {**ALL_PASS, "v2.turn": "fail", "v2.cancel": "fail"}),
        ("no-echo", {**ALL_PASS, "v2.turn": "fail"}),
        ("bad-session-new", {"v2.session-new": "fail", "v2.turn": "skip", "v2.cancel": "skip"}),
    ],
)
async def test_each_defect_gets_its_verdict(mode: str, expected: dict[str, str]) -> None:
    report = await check(sys.executable, str(PEER), mode)
    assert verdicts(report) == expected
    assert report.exit_code == (1 if "fail" in expected.values() else 0)


async def test_failures_say_what_was_expected_and_show_the_frames() -> None:
    report = await check(sys.executable, str(PEER), "no-idle")
    turn = next(r for r in report.results if r.id == "v2.turn")
    assert turn.message.startswith("no state_update idle within 3 s after the acknowledgement")
    assert "not judged" in turn.message
    assert turn.expected.startswith("state_update running, the output, then state_update idle")
    assert turn.got[0].startswith('-> {"jsonrpc":"2.0","id":3,"method":"session/prompt"')
    assert any('"result":{"messageId":' in line for line in turn.got)
    assert any('"state":"running"' in line for line in turn.got)
    assert "state_update idle" in turn.fix and "v2/prompt-lifecycle" in turn.rule.source
    report = await check(sys.executable, str(PEER), "no-stop-reason")
    text = found(report, "v2.turn")
    assert text.startswith("the idle state_update that ended the turn carries no stopReason")
    assert '"state":"idle"}' in text
    report = await check(sys.executable, str(PEER), "late")
    text = found(report, "v2.turn")
    assert text.startswith("1 update(s) of the turn after its idle\n<- ")
    assert "one more thing" in text.splitlines()[1]
    report = await check(sys.executable, str(PEER), "no-echo")
    turn = next(r for r in report.results if r.id == "v2.turn")
    assert turn.message.startswith("no user_message update with the acknowledged messageId '")
    assert turn.expected.startswith("session/update user_message {messageId:")
    report = await check(sys.executable, str(PEER), "ignores-cancel")
    assert found(report, "v2.cancel").startswith(
        "the turn ended with stopReason 'end_turn' after session/cancel"
    )


async def test_a_message_that_breaks_the_v2_schema_fails_the_turn() -> None:
    report = await check(sys.executable, str(PEER), "bad-ack")
    assert verdicts(report)["v2.turn"] == "fail"
    text = found(report, "v2.turn")
    assert text.startswith("messages of the turn break the v2 schema\n")
    assert "v2 session/prompt (PromptResponse) at $.result: 'messageId' is a required" in text
    report = await check(sys.executable, str(PEER), "stranger")
    text = found(report, "v2.turn")
    assert text.startswith("updates for another session during the turn\n<- ")
    assert '"sessionId":"no-such-session"' in text


async def test_a_failed_v2_initialize_fails_that_case_only() -> None:
    # The second v2 initialize (v2.turn's) kills the agent: that is a failure of v2.turn,
    # not a sign that the agent does not speak v2, and v2.cancel tries again.
    with tempfile.TemporaryDirectory() as scratch:
        count = str(Path(scratch) / "initializations")
        report = await check(sys.executable, str(PEER), "dies-once", count)
    assert verdicts(report) == {"v2.session-new": "pass", "v2.turn": "fail", "v2.cancel": "pass"}
    turn = next(r for r in report.results if r.id == "v2.turn")
    assert turn.message == (
        "initialize with protocolVersion 2 got the connection closed before an answer"
    )
    assert turn.got[0] == "-> initialize with protocolVersion 2, in v2's shape"
    assert turn.expected.startswith("protocolVersion 2 (an agent that speaks v2), or 1 or error")
    assert report.exit_code == 1


async def test_an_agent_that_refuses_v2_with_32022_skips_them() -> None:
    refuses = HERE / "peers" / "negotiation_agent.py"
    report = await check(sys.executable, str(refuses), "lying")  # -32022 to any version
    assert verdicts(report) == dict.fromkeys(CASES, "skip")
    assert {r.message for r in report.results} == {
        NO_V2 + "error -32022: 'Unsupported protocol version')"
    }


async def test_an_agent_that_cannot_answer_ends_the_check_at_its_start() -> None:
    options = CheckOptions(
        timeout=1.0, settle=0.2, eof_grace=0.5, startup_timeout=1.0, only=("v2",)
    )
    report = await check(sys.executable, str(HERE / "peers" / "silent.py"), options=options)
    assert verdicts(report) == {"start.initialize": "warn"}
    assert report.exit_code == 2


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(
    ("mode", "expected"),
    [("v2", ALL_PASS), ("router", ALL_PASS), ("router-v1", dict.fromkeys(CASES, "skip"))],
)
async def test_the_typescript_sdk_v2_app(mode: str, expected: dict[str, str]) -> None:
    node_dir = _foreign.node_sdk_dir()
    assert node_dir is not None, "node is on PATH but npm is not"
    script = _foreign._node_script(_foreign.PEERS_DIR / "ts_v2_agent.mjs")
    # Each case starts node and the SDK again: on a loaded CI machine that alone can take
    # seconds. Every wait of these cases ends as soon as the answer comes (the cancelled
    # turn is cancelled as soon as it is acknowledged), so a long timeout costs nothing
    # when the app is right.
    options = CheckOptions(
        timeout=30.0, settle=0.2, eof_grace=5.0, only=("v2",), cancel_prompt="wait"
    )
    report = await check(_foreign._node(), str(script), "--mode", mode, options=options)
    assert verdicts(report) == expected, [(r.id, r.message) for r in report.results]
