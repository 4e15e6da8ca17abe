"""`acpstack check agent` against agents written to be wrong in one way each
(tests/conformance/peers/): every defect is found, with the right verdict, and the checker
itself never hangs or crashes, whatever the agent does. Only a broken MUST or schema rule
fails; a SHOULD, a MAY, a leniency, a robustness finding or no answer in time is a
warning. The correct raw agent those peers are built on passes every case."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from acpstack.conformance import (
    AgentTarget,
    CheckOptions,
    Level,
    Report,
    Verdict,
    check_agent,
    render_tail,
)
from acpstack.conformance._report import summary

PEERS = Path(__file__).resolve().parent / "peers"
FAST = {"timeout": 3.0, "settle": 0.2, "eof_grace": 1.5}

pytestmark = pytest.mark.timeout(90)


async def run(peer: str, *only: str, **options: object) -> Report:
    script, *args = peer.split()
    target = AgentTarget(command=(sys.executable, str(PEERS / script), *args))
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
                # the turn was provably running: a request sent after the cancel was
                # answered before the prompt
                "cancel.session-cancel": "fail",
                "schema.agent-messages": "fail",
            },
        ),
        (
            "late_update.py",
            ("prompt.no-late-updates", "prompt.updates-scoped"),
            # a chunk for the other, idle session: suspect, but that session exists
            {"prompt.no-late-updates": "fail", "prompt.updates-scoped": "warn"},
        ),
        (
            "unadvertised_method.py",
            ("caps.unadvertised-methods",),
            # the MUST NOT is the client's: answering breaks nothing
            {"caps.unadvertised-methods": "warn"},
        ),
        (
            "no_method_not_found.py",
            ("caps.",),
            {
                # -32603 instead of -32601: a SHOULD
                "caps.unknown-method": "warn",
                "caps.extension-method": "warn",
                # a reply to a notification: JSON-RPC's MUST NOT
                "caps.unknown-notification": "fail",
                "caps.unadvertised-methods": "warn",
                "caps.client-gates": "pass",
                "caps.terminal-release": "pass",
            },
        ),
        # the client closes stdin and then terminates the agent: no MUST to exit alone
        ("ignores_eof.py", ("init.eof-exit",), {"init.eof-exit": "warn"}),
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
                # it dies on `42`, which a client must not send: robustness
                "robust.not-an-object": "warn",
            },
        ),
        (
            "scoped_updates.py other-session",
            ("prompt.updates-scoped",),
            {"prompt.updates-scoped": "pass"},
        ),
        (
            "scoped_updates.py unknown-session",
            ("prompt.updates-scoped",),
            {"prompt.updates-scoped": "fail"},
        ),
    ],
)
async def test_each_defect_gets_its_verdict(
    peer: str, only: tuple[str, ...], expected: dict[str, str]
) -> None:
    report = await run(peer, *only, cancel_prompt="wait")
    assert {k: v.value for k, v in verdicts(report).items()} == expected
    assert report.exit_code == (1 if "fail" in expected.values() else 0)
    for found in report.results:
        if found.verdict == Verdict.FAIL:  # every failure rests on a MUST or a schema rule
            assert found.rule.level in (Level.MUST, Level.SCHEMA), found.id


async def test_a_fast_turn_is_never_failed_for_ignoring_a_cancel_it_could_not_see() -> None:
    # The chunk and the answer come in one write or two: the cancel (sent on the chunk)
    # goes out after the answer arrived (skip), or before it but with nothing to show
    # that the turn was still running (warn). Never a failure.
    for _ in range(3):
        report = await run("fast_turn.py", "cancel.session-cancel", cancel_prompt="wait")
        assert verdicts(report)["cancel.session-cancel"] in (Verdict.SKIP, Verdict.WARN)


async def test_invalid_messages_are_reported_with_their_json_path() -> None:
    report = await run("invalid_schema.py", "prompt.stop-reason", "schema.agent-messages")
    assert verdicts(report)["schema.agent-messages"] == Verdict.FAIL
    shown = result(report, "schema.agent-messages")
    assert "session/update (SessionNotification) at $.params.update" in shown
    assert "'title' is a required property" in shown
    assert "$.params.update.content" in shown


async def test_an_agent_that_dies_on_bad_input_gets_a_robustness_warning_and_a_new_process() -> (
    None
):
    report = await run("dies_on_bad_input.py", "robust.invalid-json", "robust.not-an-object")
    assert verdicts(report) == {
        "robust.invalid-json": Verdict.WARN,
        "robust.not-an-object": Verdict.PASS,
    }
    assert report.exit_code == 0
    found = next(r for r in report.results if r.id == "robust.invalid-json")
    assert found.rule.level == Level.ROBUSTNESS
    tail = render_tail(report)
    assert tail.index("Robustness (input a client must not send") < tail.index(
        "WARN robust.invalid-json"
    )
    assert "1 warnings (1 robustness)" in tail
    shown = result(report, "robust.invalid-json")
    assert "went away" in shown or "stopped answering" in shown
    assert "JSONDecodeError" in shown  # the agent's last stderr lines are part of the report


async def test_an_agent_that_ignores_cancellation_gets_warnings_without_hanging_the_checker() -> (
    None
):
    # A turn that never ends after the cancel looks like a slow one: the checker says it
    # got no answer in time, and judges no rule on that.
    began = time.monotonic()
    report = await run("hangs_on_cancel.py", "cancel.", cancel_prompt="wait", timeout=2.0)
    assert verdicts(report) == {
        "cancel.session-cancel": Verdict.WARN,
        "cancel.permission": Verdict.SKIP,
        "cancel.cancel-request": Verdict.WARN,
    }
    shown = result(report, "cancel.session-cancel")
    assert "no answer within 2.0 s" in shown and "not judged" in shown
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


async def test_an_agent_that_never_answers_ends_the_check_after_the_startup_allowance() -> None:
    began = time.monotonic()
    report = await run("silent.py", "init", "session.new", timeout=1.0, startup_timeout=2.0)
    assert [(r.id, r.verdict) for r in report.results] == [("start.initialize", Verdict.WARN)]
    shown = result(report, "start.initialize")
    assert "no answer to initialize within the start-up allowance of 2 s" in shown
    assert report.startup_seconds is None and report.exit_code == 2  # nothing was checked
    assert time.monotonic() - began < 30


async def test_an_agent_that_dies_at_start_is_one_failure_found_at_once() -> None:
    began = time.monotonic()
    report = await run("dead_at_start.py", startup_timeout=60.0)
    assert [(r.id, r.verdict) for r in report.results] == [("start.initialize", Verdict.FAIL)]
    shown = result(report, "start.initialize")
    assert "exited before answering initialize" in shown
    assert "cannot load my configuration" in shown  # its stderr
    assert report.exit_code == 1
    assert time.monotonic() - began < 20  # not one wait per case, nor the allowance


async def test_an_agent_that_closes_stdout_before_it_exits_shows_its_exit_and_stderr() -> None:
    report = await run("dead_after_closing_stdout.py", startup_timeout=60.0)
    assert [(r.id, r.verdict) for r in report.results] == [("start.initialize", Verdict.FAIL)]
    shown = result(report, "start.initialize")
    assert "exited with code 3" in shown
    assert "cannot load my configuration" in shown  # its stderr, written after stdout closed


async def test_a_slow_starting_agent_gets_verdicts_within_its_startup_allowance() -> None:
    # 3.5 s to start, 2.5 s per answer: every new process (one per group here) gets a
    # start-up allowance for its first answer, so no case times out or skips.
    only = ("session.new", "prompt.stop-reason")
    target = AgentTarget(command=(sys.executable, str(PEERS / "slow_start.py"), "3.5"))
    options = CheckOptions(only=only, timeout=2.5, settle=0.2, eof_grace=1.5, startup_timeout=30)
    report = await check_agent(target, options)
    assert {k: v.value for k, v in verdicts(report).items()} == dict.fromkeys(only, "pass")
    # (the checker's clock starts once the process is spawned, a moment after the peer's
    # own 3.5 s began: under load that moment is visible)
    assert report.startup_seconds is not None and report.startup_seconds >= 3.0
    assert f"start-up {report.startup_seconds:.1f} s (start-up allowance 30 s)" in summary(report)


async def test_the_fast_agent_reports_its_startup() -> None:
    report = await run("raw_agent.py", "session.new")
    assert report.startup_seconds is not None and report.startup_seconds < report.startup_allowance
    assert "(start-up allowance 60 s)" in summary(report)


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
        # agents MAY refuse a prompt for an unknown session: answering it is no failure
        ("broken_sessions.py any-session", ("session.unknown-id",), "warn"),
        ("broken_sessions.py bad-mode", ("session.modes",), "warn"),
        # an agent may refuse an advertised mode (e.g. in a folder it does not trust)
        ("broken_sessions.py refuses-mode", ("session.modes",), "warn"),
        ("broken_sessions.py bad-config", ("session.config-options",), "warn"),
        ("broken_sessions.py bad-list", ("session.list",), "warn"),
        ("broken_sessions.py late-load", ("session.load",), "fail"),
        ("broken_sessions.py empty-load", ("session.load",), "warn"),
        ("broken_sessions.py resume-replays", ("session.resume",), "fail"),
        ("broken_sessions.py bad-close", ("session.close",), "warn"),
        ("broken_sessions.py delete-once", ("session.delete",), "warn"),
        ("broken_misc.py no-agent-info", ("init.response",), "warn"),
        ("broken_misc.py terminal-auth", ("auth.terminal-gate",), "fail"),
        ("broken_misc.py needless-auth", ("auth.flow",), "warn"),
        ("broken_misc.py lenient-auth", ("auth.flow",), "warn"),
        # robustness: a client must not send invalid params, lines it cannot read...
        ("broken_misc.py lenient-params", ("robust.invalid-params",), "warn"),
        ("broken_misc.py internal-params", ("robust.invalid-params",), "warn"),
        ("broken_misc.py small-lines", ("robust.oversized-line",), "warn"),
        ("broken_misc.py drops-long-lines", ("robust.oversized-line",), "warn"),
        ("broken_misc.py answers-responses", ("robust.stray-response",), "warn"),
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
