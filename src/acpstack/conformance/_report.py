"""A check report as a table for people, as JSON, and as JUnit XML for CI."""

from __future__ import annotations

import json
import re
import textwrap
import xml.etree.ElementTree as ET
from typing import Any

from acpstack.conformance._model import CaseResult, Level, Verdict
from acpstack.conformance._runner import Report

# Characters XML 1.0 cannot carry (an agent may write anything, e.g. NUL bytes).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# Narrower than this beside the case ids, a message goes under them instead.
_MIN_MESSAGE_WIDTH = 30
LABELS = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.WARN: "WARN", Verdict.SKIP: "skip"}


def result_line(result: CaseResult, width: int = 30, columns: int | None = None) -> str:
    """One line of the table: the verdict, the case id padded to `width`, the message.

    With `columns` (a terminal's width) a message too long for the line wraps at word
    boundaries: beside the id when that leaves room for it, else under the id.
    """
    head = f"{LABELS[result.verdict]:<5} {result.id:<{width}} "
    line = head + result.message
    if columns is None or len(line) <= columns:
        return line
    if columns - len(head) >= _MIN_MESSAGE_WIDTH:
        return "\n".join(textwrap.wrap(line, columns, subsequent_indent=" " * len(head)))
    under = textwrap.wrap(
        result.message, columns, initial_indent="      ", subsequent_indent="      "
    )
    return "\n".join([head.rstrip(), *under])


def summary(report: Report) -> str:
    """The counts per verdict (robustness warnings counted apart too), the time, and the
    measured start-up."""
    robust = len(_robustness(report))
    warnings = f"{report.count(Verdict.WARN)} warnings" + (
        f" ({robust} robustness)" if robust else ""
    )
    parts = [
        f"{report.count(Verdict.PASS)} passed",
        f"{report.count(Verdict.FAIL)} failed",
        warnings,
        f"{report.count(Verdict.SKIP)} skipped",
    ]
    return ", ".join(parts) + f" in {report.seconds:.1f} s; {startup(report)}"


def startup(report: Report) -> str:
    """The measured start-up: how long the first agent process took to answer
    `initialize`, against the allowance."""
    allowance = f"(start-up allowance {report.startup_allowance:g} s)"
    if report.startup_seconds is None:
        return f"the agent did not answer initialize {allowance}"
    return f"start-up {report.startup_seconds:.1f} s {allowance}"


def _robustness(report: Report) -> list[CaseResult]:
    return [
        r for r in report.results if r.verdict == Verdict.WARN and r.rule.level == Level.ROBUSTNESS
    ]


def header(report: Report) -> str:
    """The report's first line: what was checked, with the agent's name and version."""
    info = report.agent_info or {}
    name = info.get("title") or info.get("name")
    about = f" ({name} {info.get('version', '')})".rstrip() if name else ""
    return f"acpstack check agent: {report.target}{about}"


def details(result: CaseResult, columns: int = 100) -> str:
    """What was expected, what came back and how to fix it, for a failure or warning."""
    lines = [f"{LABELS[result.verdict]} {result.id}: {result.title}"]
    lines += textwrap.wrap(f"rule: {result.rule.text}", columns, subsequent_indent="      ")
    lines.append(f"      ({result.rule.cites})")
    lines.append(f"expected: {result.expected}")
    lines.append(f"got: {result.message}")
    lines += [f"   {line}" for line in result.got]
    lines += textwrap.wrap(f"fix: {result.fix}", columns, subsequent_indent="     ")
    return "\n".join(lines)


def render_text(report: Report) -> str:
    """The whole report for people: header, one line per case, then `render_tail`."""
    width = max((len(r.id) for r in report.results), default=10)
    table = [result_line(r, width) for r in report.results]
    return "\n".join([header(report), "", *table, ""]) + render_tail(report)


def render_tail(report: Report, columns: int = 100) -> str:
    """The details of every failure, warning and robustness finding (each kind under its
    heading), then the summary line."""
    robust = _robustness(report)
    sections = [
        (
            "Failures (each breaks a MUST of the spec or a schema rule, cited):",
            [r for r in report.results if r.verdict == Verdict.FAIL],
        ),
        (
            "Warnings (SHOULD, MAY, leniency, or an outcome the checker could not establish):",
            [r for r in report.results if r.verdict == Verdict.WARN and r not in robust],
        ),
        (
            "Robustness (input a client must not send: how the agent copes, no rule broken):",
            robust,
        ),
    ]
    out: list[str] = []
    for heading, results in sections:
        if results:
            out.append(heading + "\n")
            out += [details(r, columns) + "\n" for r in results]
    return "\n".join([*out, summary(report)]) + "\n"


def to_json(report: Report) -> dict[str, Any]:
    return {
        "target": report.target,
        "agentInfo": report.agent_info,
        "seconds": round(report.seconds, 3),
        "summary": {v.value: report.count(v) for v in Verdict},
        "robustness": len(_robustness(report)),
        "startupSeconds": (
            None if report.startup_seconds is None else round(report.startup_seconds, 3)
        ),
        "startupAllowance": report.startup_allowance,
        "exitCode": report.exit_code,
        "results": [r.to_json() for r in report.results],
    }


def render_json(report: Report) -> str:
    """The whole report as indented JSON: target, agentInfo, seconds, the count per
    verdict, exitCode, and every result (`CaseResult.to_json`)."""
    return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"


def render_junit(report: Report) -> str:
    """JUnit XML: a failure element per fail, skipped per skip; warnings pass with a note."""
    suite = ET.Element(
        "testsuite",
        name="acpstack check agent",
        tests=str(len(report.results)),
        failures=str(report.count(Verdict.FAIL)),
        skipped=str(report.count(Verdict.SKIP)),
        errors="0",
        time=f"{report.seconds:.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="target", value=report.target)
    for result in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"acpstack.check.{result.group}",
            name=result.id,
            time=f"{result.seconds:.3f}",
        )
        if result.verdict == Verdict.FAIL:
            element = ET.SubElement(case, "failure", message=result.message, type="fail")
            element.text = details(result)
        elif result.verdict == Verdict.SKIP:
            ET.SubElement(case, "skipped", message=result.message)
        elif result.verdict == Verdict.WARN:
            ET.SubElement(case, "system-out").text = "warning: " + details(result)
    for element in suite.iter():
        element.text = _xml_safe(element.text)
        for key, value in element.attrib.items():
            element.attrib[key] = _xml_safe(value) or ""
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _xml_safe(text: str | None) -> str | None:
    return None if text is None else _NOT_XML.sub("\ufffd", text)
