"""Unit checks (no processes): message validation against the vendored schema with JSON
paths, and the three report formats."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from acpstack.conformance import (
    CaseResult,
    MessageValidator,
    Report,
    Rule,
    Verdict,
    render_json,
    render_junit,
    render_text,
)

STABLE = MessageValidator()


def update(body: dict[str, Any]) -> dict[str, Any]:
    params = {"sessionId": "s1", "update": body}
    return {"jsonrpc": "2.0", "method": "session/update", "params": params}


def problems(message: Any, *, sender: str = "agent", answered: str | None = None) -> list[str]:
    found = STABLE.validate(message, sender=sender, answered_method=answered)  # type: ignore[arg-type]
    return [str(v) for v in found]


def test_valid_messages_have_no_violation() -> None:
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
    assert problems(update(chunk)) == []
    result = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    assert problems(result, answered="session/prompt") == []
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    assert problems(request, sender="client") == []
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}
    assert problems(error, answered="session/load") == []


def test_a_violation_names_the_method_the_definition_and_the_path() -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}}
    [found] = problems(answer, answered="session/prompt")
    assert found.startswith("session/prompt (PromptResponse) at $.result.stopReason:")


def test_a_tagged_union_is_explained_by_the_variant_its_tag_selects() -> None:
    no_title = {"sessionUpdate": "tool_call", "toolCallId": "t", "kind": "read"}
    assert problems(update(no_title)) == [
        "session/update (SessionNotification) at $.params.update: 'title' is a required property"
    ]
    untyped = {"sessionUpdate": "agent_message_chunk", "content": {"text": "x"}}
    [found] = problems(update(untyped))
    assert "at $.params.update.content: `type` is missing; expected one of: text, image" in found
    unknown = {"sessionUpdate": "telepathy"}
    [found] = problems(update(unknown))
    assert "`sessionUpdate` is 'telepathy'; expected one of: user_message_chunk" in found


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ([1, 2], "$: a JSON-RPC message is a JSON object, got list"),
        ({"id": 1, "result": {}}, '$.jsonrpc: must be "2.0", got None'),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},
            "exactly one of `result` and `error`",
        ),
        ({"jsonrpc": "2.0", "id": 1.5, "result": {}}, "$.id: must be a string, an integer or null"),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"message": "x"}},
            "$.error: must be an object with an integer `code`",
        ),
    ],
)
def test_envelope_rules(message: Any, expected: str) -> None:
    assert any(expected in found for found in problems(message))


def test_extension_and_unattributed_messages_are_not_judged_by_the_schema() -> None:
    assert problems({"jsonrpc": "2.0", "method": "_vendor/thing", "params": {"any": 1}}) == []
    assert problems({"jsonrpc": "2.0", "id": 7, "result": {"whatever": True}}) == []


REQUEST = {"jsonrpc": "2.0", "id": 1}
NOTIFICATION = {"jsonrpc": "2.0"}


@pytest.mark.parametrize(
    ("message", "sender", "expected"),
    [
        (
            {**REQUEST, "method": "initialize", "params": {"protocolVersion": 1}},
            "agent",
            "initialize at $.method: `initialize` is sent by the client to the agent, never "
            "the other way round: an agent must not send it",
        ),
        (
            {**REQUEST, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
            "agent",
            "session/new at $.method: `session/new` is sent by the client to the agent",
        ),
        (
            {**NOTIFICATION, "method": "session/cancel", "params": {"sessionId": "s"}},
            "agent",
            "session/cancel at $.method: `session/cancel` is sent by the client to the agent",
        ),
        (
            {**NOTIFICATION, "method": "session/update", "params": {"sessionId": "s"}},
            "client",
            "session/update at $.method: `session/update` is sent by the agent to the client, "
            "never the other way round: a client must not send it",
        ),
        (
            {**REQUEST, "method": "fs/read_text_file", "params": {"path": "/x"}},
            "client",
            "fs/read_text_file at $.method: `fs/read_text_file` is sent by the agent to the client",
        ),
        (
            update({"sessionUpdate": "plan", "entries": []}) | {"id": 3},
            "agent",
            "session/update at $.method: `session/update` is a notification: it carries no id",
        ),
        (
            {**NOTIFICATION, "method": "session/request_permission", "params": {}},
            "agent",
            "session/request_permission at $.method: `session/request_permission` is a request: "
            "it needs an id (the client answers it)",
        ),
    ],
)
def test_a_method_sent_the_wrong_way_is_a_violation(
    message: dict[str, Any], sender: str, expected: str
) -> None:
    [found] = problems(message, sender=sender)
    assert found.startswith(expected)


def test_methods_are_known_per_direction() -> None:
    assert STABLE.known_method("initialize", "client")
    assert not STABLE.known_method("initialize", "agent")
    assert STABLE.known_method("session/update", "agent")
    assert not STABLE.known_method("session/update", "client")
    assert STABLE.known_method("$/cancel_request", "agent")
    assert STABLE.known_method("$/cancel_request", "client")
    assert STABLE.known_method("initialize") and not STABLE.known_method("agent/status")
    # cancel_request goes both ways, and an extension method is nobody's business
    cancel = {**NOTIFICATION, "method": "$/cancel_request", "params": {"requestId": 1}}
    assert problems(cancel) == problems(cancel, sender="client") == []
    assert problems({**REQUEST, "method": "agent/status", "params": {}}) == []


def test_the_unstable_schema_is_a_separate_choice() -> None:
    plan = {"sessionUpdate": "plan_removed", "planId": "p1"}
    assert problems(update(plan))  # not a stable update kind
    unstable = MessageValidator(unstable=True)
    assert unstable.validate(update(plan), sender="agent") == []


def test_importing_the_packages_does_not_load_jsonschema() -> None:
    code = "import sys, acpstack.conformance, acpstack.traffic; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def sample_report() -> Report:
    rule = Rule("Agents MUST do X.", "https://agentclientprotocol.com/protocol/x")
    return Report(
        "agent --flag",
        [
            CaseResult("a.ok", "fine", "a", Verdict.PASS, "ok", rule),
            CaseResult(
                "a.bad",
                "broken",
                "a",
                Verdict.FAIL,
                "got \x00 garbage \x1b[31m",
                rule,
                "X",
                ['<- {"x":\x01}'],
                "do X",
            ),
            CaseResult("a.meh", "iffy", "a", Verdict.WARN, "hmm", rule, "Y", [], "do Y"),
            CaseResult("a.skip", "n/a", "a", Verdict.SKIP, "not advertised", rule),
        ],
        {"name": "agent", "version": "1"},
        1.5,
    )


def test_text_report_shows_details_for_failures_and_warnings_only() -> None:
    text = render_text(sample_report())
    assert "FAIL  a.bad" in text and "skip  a.skip" in text
    assert "expected: X" in text and "fix: do X" in text and "fix: do Y" in text
    assert "1 passed, 1 failed, 1 warnings, 1 skipped in 1.5 s" in text
    assert text.count("rule: Agents MUST do X.") == 2


def test_json_report() -> None:
    data = json.loads(render_json(sample_report()))
    assert data["exitCode"] == 1 and data["summary"] == {"pass": 1, "fail": 1, "warn": 1, "skip": 1}
    by_id = {r["id"]: r for r in data["results"]}
    assert by_id["a.bad"]["fix"] == "do X" and "fix" not in by_id["a.ok"]


def test_junit_report_is_valid_xml_even_with_control_characters() -> None:
    suite = ET.fromstring(render_junit(sample_report()).split("?>", 1)[1])
    assert (
        suite.get("tests") == "4" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    )
    failure = suite.find("testcase[@name='a.bad']/failure")
    assert failure is not None and "\ufffd garbage" in failure.get("message", "")
    assert suite.find("testcase[@name='a.skip']/skipped") is not None
    warn = suite.find("testcase[@name='a.meh']/system-out")
    assert warn is not None and (warn.text or "").startswith("warning:")


def test_a_result_line_wraps_at_word_boundaries_in_a_narrow_terminal() -> None:
    from acpstack.conformance import result_line

    rule = Rule("r", "schema $defs/X")
    message = "refused (error -32600: 'Invalid request: `initialize` must be the first request')"
    result = CaseResult("init.before-initialize", "t", "init", Verdict.PASS, message, rule)
    assert result_line(result, 30) == f"PASS  {'init.before-initialize':<30} {message}"
    for columns in (40, 80, 120):
        lines = result_line(result, 30, columns).splitlines()
        assert all(len(line) <= columns for line in lines), lines
        assert " ".join(" ".join(lines).split()) == f"PASS init.before-initialize {message}"
    narrow = result_line(result, 30, 40).splitlines()
    assert narrow[0] == "PASS  init.before-initialize" and narrow[1].startswith("      refused")
    beside = result_line(result, 30, 90).splitlines()
    assert beside[1].startswith(" " * 37) and len(beside) == 2


def test_every_case_that_can_fail_quotes_its_must_or_names_its_schema_definition() -> None:
    # A failure must rest on a MUST of the spec (or JSON-RPC) or on a schema rule: the
    # cases that can fail say which, in words a maintainer can look up.
    from acpstack.conformance import Level, all_cases

    wrong = []
    for case in all_cases():
        if case.rule.level == Level.MUST and "MUST" not in case.rule.text:
            wrong.append(f"{case.id}: a MUST rule without the MUST quoted")
        if case.rule.level == Level.SCHEMA and "schema" not in case.rule.source:
            wrong.append(f"{case.id}: a schema rule without the schema named in its source")
    assert wrong == []
    levels = {case.id: case.rule.level for case in all_cases()}
    # the false verdicts of issue 30: none of these can fail a check any more
    for case_id in (
        "session.unknown-id",
        "caps.unadvertised-methods",
        "caps.extension-method",
        "robust.wrong-jsonrpc",
        "robust.not-an-object",
        "init.eof-exit",
        "session.modes",
    ):
        assert levels[case_id] not in (Level.MUST, Level.SCHEMA), case_id


def test_a_report_cites_the_rule_of_each_failure_and_groups_robustness_apart() -> None:
    from acpstack.conformance import Level, render_tail

    must = Rule("The Agent MUST do it.", "https://example.org/spec#it", Level.MUST)
    robust = Rule("Bad input.", "https://www.jsonrpc.org/specification", Level.ROBUSTNESS)
    report = Report(
        "agent",
        [
            CaseResult("a.must", "it", "prompt", Verdict.FAIL, "did not", must),
            CaseResult("a.robust", "bad", "robustness", Verdict.WARN, "died", robust),
        ],
        startup_seconds=1.25,
        startup_allowance=60.0,
    )
    tail = render_tail(report)
    assert "(MUST: https://example.org/spec#it)" in tail
    assert tail.index("Failures (each breaks a MUST") < tail.index("FAIL a.must")
    assert tail.index("Robustness (") < tail.index("WARN a.robust")
    assert "0 passed, 1 failed, 1 warnings (1 robustness), 0 skipped" in tail
    assert "start-up 1.2 s (start-up allowance 60 s)" in tail
    data = json.loads(render_json(report))
    assert data["results"][0]["rule"]["level"] == "MUST"
    assert data["results"][0]["cites"] == "MUST: https://example.org/spec#it"
    assert data["robustness"] == 1 and data["startupSeconds"] == 1.25


def test_later_processes_wait_for_a_start_as_slow_as_the_one_measured() -> None:
    from acpstack.conformance import CheckOptions
    from acpstack.conformance._runner import later_allowance

    options = CheckOptions(timeout=5.0, startup_timeout=60.0)
    assert later_allowance(options, 2.0) == 11.0  # three times 2 s, plus the timeout
    assert later_allowance(options, 30.0) == 60.0  # never more than --startup-timeout
    assert later_allowance(options, None) == 60.0
