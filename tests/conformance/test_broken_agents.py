"""`acpstack check agent` against agents written to be wrong in one way each
(tests/conformance/peers/): every defect is found, with the right verdict, and the checker
itself never hangs or crashes, whatever the agent does. The correct raw agent those peers
are built on passes every case."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from acpstack.conformance import AgentTarget, CheckOptions, Report, Verdict, check_agent

PEERS = Path(__file__).resolve().parent / "peers"
FAST = {"timeout": 3.0, "settle": 0.2, "eof_grace": 1.5}

pytestmark = pytest.mark.timeout(90)


async def run(peer: str, *only: str, **options: object) -> Report:
    target = AgentTarget(command=(sys.executable, str(PEERS / peer)))
    chosen = {**FAST, **options}
    return await check_agent(target, CheckOptions(only=only, **chosen))  # type: ignore[arg-type]


def verdicts(report: Report) -> dict[str, Verdict]:
    return {r.id: r.verdict for r in report.results}


def result(report: Report, case_id: str) -> str:
    found = next(r for r in report.results if r.id == case_id)
    return "\n".join([found.message, *found.got])


async def test_the_correct_raw_agent_passes_every_case() -> None:
    report = await run("raw_agent.py", cancel_prompt="permission")
    failing = {r.id: r.message for r in report.results if r.verdict in (Verdict.FAIL, Verdict.WARN)}
    assert failing == {}
    assert verdicts(report)["cancel.permission"] == Verdict.PASS
    assert verdicts(report)["cancel.session-cancel"] == Verdict.PASS
    assert report.exit_code == 0


@pytest.mark.parametrize(
    ("peer", "only", "expected"),
    [
        (
            "wrong_stop_reason.py",
            ("prompt.stop-reason", "cancel.session-cancel", "schema.agent-messages"),
            {
                "prompt.stop-reason": "fail",
                "cancel.session-cancel": "fail",
                "schema.agent-messages": "fail",
            },
        ),
        (
            "late_update.py",
            ("prompt.no-late-updates", "prompt.updates-scoped"),
            {"prompt.no-late-updates": "fail", "prompt.updates-scoped": "fail"},
        ),
        (
            "unadvertised_method.py",
            ("caps.unadvertised-methods",),
            {"caps.unadvertised-methods": "fail"},
        ),
        (
            "no_method_not_found.py",
            ("caps.",),
            {
                "caps.unknown-method": "fail",
                "caps.extension-method": "fail",
                "caps.unknown-notification": "fail",
                "caps.unadvertised-methods": "warn",
                "caps.client-gates": "pass",
                "caps.terminal-release": "pass",
            },
        ),
        ("ignores_eof.py", ("init.eof-exit",), {"init.eof-exit": "fail"}),
        (
            "calls_gated.py",
            ("prompt.stop-reason", "caps.client-gates", "caps.terminal-release"),
            {
                "prompt.stop-reason": "pass",
                "caps.client-gates": "fail",
                "caps.terminal-release": "fail",
            },
        ),
        (
            "stdout_garbage.py",
            ("session.unique-ids", "wire.stdout-only-frames", "wire.responses-match"),
            {
                "session.unique-ids": "fail",
                "wire.stdout-only-frames": "fail",
                "wire.responses-match": "fail",
            },
        ),
        (
            "echoes_version.py",
            ("init.protocol-v2", "init.protocol-future", "robust.not-an-object"),
            {
                "init.protocol-v2": "fail",
                "init.protocol-future": "fail",
                "robust.not-an-object": "fail",
            },
        ),
    ],
)
async def test_each_defect_gets_its_verdict(
    peer: str, only: tuple[str, ...], expected: dict[str, str]
) -> None:
    report = await run(peer, *only, cancel_prompt="wait")
    assert {k: v.value for k, v in verdicts(report).items()} == expected
    assert report.exit_code == 1


async def test_invalid_messages_are_reported_with_their_json_path() -> None:
    report = await run("invalid_schema.py", "prompt.stop-reason", "schema.agent-messages")
    assert verdicts(report)["schema.agent-messages"] == Verdict.FAIL
    shown = result(report, "schema.agent-messages")
    assert "session/update (SessionNotification) at $.params.update" in shown
    assert "'title' is a required property" in shown
    assert "$.params.update.content" in shown


async def test_an_agent_that_dies_on_bad_input_fails_and_the_next_case_gets_a_new_one() -> None:
    report = await run("dies_on_bad_input.py", "robust.invalid-json", "robust.not-an-object")
    assert verdicts(report) == {
        "robust.invalid-json": Verdict.FAIL,
        "robust.not-an-object": Verdict.PASS,
    }
    shown = result(report, "robust.invalid-json")
    assert "went away" in shown or "stopped answering" in shown
    assert "JSONDecodeError" in shown  # the agent's last stderr lines are part of the report


async def test_an_agent_that_ignores_cancellation_fails_without_hanging_the_checker() -> None:
    began = time.monotonic()
    report = await run("hangs_on_cancel.py", "cancel.", cancel_prompt="wait", timeout=2.0)
    assert verdicts(report) == {
        "cancel.session-cancel": Verdict.FAIL,
        "cancel.permission": Verdict.SKIP,
        "cancel.cancel-request": Verdict.FAIL,
    }
    assert "no answer within 2.0 s" in result(report, "cancel.session-cancel")
    assert time.monotonic() - began < 30


async def test_known_deviations_are_warnings_and_do_not_fail_the_check() -> None:
    report = await run("deviations.py", "prompt.stop-reason", "deviation.", "schema.agent-messages")
    assert {k: v.value for k, v in verdicts(report).items()} == {
        "prompt.stop-reason": "pass",
        "schema.agent-messages": "pass",
        "deviation.legacy-models": "warn",
        "deviation.env-var-auth": "warn",
        "deviation.custom-methods": "warn",
        "deviation.string-raw-output": "warn",
    }
    assert report.exit_code == 0


@pytest.mark.skipif(shutil.which("cat") is None, reason="no cat")
async def test_an_agent_that_echoes_the_client_fails_the_schema_case() -> None:
    # `cat` as the agent sends the checker's own initialize back: a method of the client
    only = ("session.new", "schema.agent-messages", "deviation.custom-methods")
    target = AgentTarget(command=(str(shutil.which("cat")),))
    report = await check_agent(target, CheckOptions(only=only, **FAST))  # type: ignore[arg-type]
    assert {k: v.value for k, v in verdicts(report).items()} == {
        "session.new": "skip",  # the echoed answer to the echoed initialize: an error
        "schema.agent-messages": "fail",
        "deviation.custom-methods": "warn",
    }
    found = next(r for r in report.results if r.id == "schema.agent-messages")
    assert found.got[0].startswith(
        "initialize at $.method: `initialize` is sent by the client to the agent, never the "
        'other way round: an agent must not send it  [frame: <- {"jsonrpc":"2.0","id":1,'
        '"method":"initialize",'
    )
    assert "an echo" in found.fix and "send only agent messages" in found.fix
    custom = result(report, "deviation.custom-methods")
    assert "a method of the client (see schema.agent-messages): <- " in custom
    assert report.exit_code == 1


async def test_an_agent_that_never_answers_never_hangs_the_checker() -> None:
    began = time.monotonic()
    report = await run(
        "silent.py",
        "init.protocol-v1",
        "init.response",
        "session.new",
        "prompt.stop-reason",
        "robust.invalid-json",
        "caps.client-gates",
        timeout=1.0,
    )
    assert verdicts(report)["init.protocol-v1"] == Verdict.FAIL
    assert "no answer within 1.0 s" in result(report, "init.protocol-v1")
    # the shared connection could not be initialized: the cases that need it say why
    assert verdicts(report)["session.new"] == Verdict.SKIP
    assert "did not complete initialize" in result(report, "session.new")
    assert report.exit_code == 1
    assert time.monotonic() - began < 45


SESSION_CASES = (
    "session.new",
    "session.unique-ids",
    "session.absolute-cwd",
    "session.unknown-id",
    "session.modes",
    "session.config-options",
    "session.list",
    "session.load",
    "session.resume",
    "session.close",
    "session.delete",
)


async def test_the_agent_with_every_session_method_passes_the_session_cases() -> None:
    # the base of the broken_sessions.py modes below: each of them breaks one thing of it
    report = await run("broken_sessions.py", "session.", "schema.agent-messages")
    assert {k: v.value for k, v in verdicts(report).items()} == {
        **dict.fromkeys(SESSION_CASES, "pass"),
        "schema.agent-messages": "pass",
    }


@pytest.mark.parametrize(
    ("peer", "only", "expected"),
    [
        # one defect per run, each in a mode of broken_sessions.py or broken_misc.py
        ("broken_sessions.py no-session-id", ("session.new",), "fail"),
        ("broken_sessions.py relative-cwd", ("session.absolute-cwd",), "warn"),
        ("broken_sessions.py any-session", ("session.unknown-id",), "fail"),
        ("broken_sessions.py bad-mode", ("session.modes",), "fail"),
        ("broken_sessions.py bad-config", ("session.config-options",), "fail"),
        ("broken_sessions.py bad-list", ("session.list",), "fail"),
        ("broken_sessions.py late-load", ("session.load",), "fail"),
        ("broken_sessions.py empty-load", ("session.load",), "warn"),
        ("broken_sessions.py resume-replays", ("session.resume",), "fail"),
        ("broken_sessions.py bad-close", ("session.close",), "fail"),
        ("broken_sessions.py delete-once", ("session.delete",), "warn"),
        ("broken_misc.py no-agent-info", ("init.response",), "warn"),
        ("broken_misc.py terminal-auth", ("auth.terminal-gate",), "fail"),
        ("broken_misc.py needless-auth", ("auth.flow",), "fail"),
        ("broken_misc.py lenient-auth", ("auth.flow",), "warn"),
        ("broken_misc.py lenient-params", ("robust.invalid-params",), "fail"),
        ("broken_misc.py internal-params", ("robust.invalid-params",), "warn"),
        ("broken_misc.py small-lines", ("robust.oversized-line",), "fail"),
        ("broken_misc.py drops-long-lines", ("robust.oversized-line",), "warn"),
        ("broken_misc.py answers-responses", ("robust.stray-response",), "fail"),
        ("broken_misc.py strict-fields", ("robust.unknown-fields",), "fail"),
        (
            "broken_misc.py permission-ignores-cancel",
            ("cancel.session-cancel", "cancel.permission"),
            "fail",
        ),
    ],
)
async def test_each_case_finds_its_defect(peer: str, only: tuple[str, ...], expected: str) -> None:
    script, mode = peer.split()
    target = AgentTarget(command=(sys.executable, str(PEERS / script), mode))
    options = CheckOptions(only=only, cancel_prompt="permission", **FAST)  # type: ignore[arg-type]
    report = await check_agent(target, options)
    assert {k: v.value for k, v in verdicts(report).items()} == dict.fromkeys(only, expected)
    assert report.exit_code == (1 if expected == "fail" else 0)
