"""Conformance checks for ACP peers: `acpstack check agent` and `acpstack check client`.

`check_agent` runs a suite of cases against any agent (a command on stdio, or a remote
URL). Each case cites the rule it checks and ends pass, fail, warn or skip; a failure says
what was expected, which frames came back and how to fix it. `MessageValidator` checks
single messages against the vendored official JSON Schema (needs the `check` extra:
`jsonschema`). `ClientCheckAgent` is the agent of `check client`: prompted, it exercises
the client that runs it and reports what the client did. `Probe` is the raw JSON-RPC end
both use (and `acpstack replay`): it keeps every frame and never waits without a timeout.
"""

from acpstack.conformance._catalog import GROUPS, all_cases
from acpstack.conformance._client_check import ClientCheckAgent, serve_client_check
from acpstack.conformance._client_sim import Answer
from acpstack.conformance._context import CheckOptions
from acpstack.conformance._frames import Frame
from acpstack.conformance._model import Case, CaseResult, Level, Rule, Verdict
from acpstack.conformance._probe import Probe, Reply, Responder
from acpstack.conformance._report import (
    header,
    render_json,
    render_junit,
    render_tail,
    render_text,
    result_line,
)
from acpstack.conformance._runner import Report, check_agent, select_cases, unknown_selectors
from acpstack.conformance._schema import MessageValidator, SchemaUnavailable, Violation
from acpstack.conformance._target import AgentTarget, TargetUnavailable

__all__ = [
    "GROUPS",
    "AgentTarget",
    "Answer",
    "Case",
    "CaseResult",
    "CheckOptions",
    "ClientCheckAgent",
    "Frame",
    "Level",
    "MessageValidator",
    "Probe",
    "Reply",
    "Report",
    "Responder",
    "Rule",
    "SchemaUnavailable",
    "TargetUnavailable",
    "Verdict",
    "Violation",
    "all_cases",
    "check_agent",
    "header",
    "render_json",
    "render_junit",
    "render_tail",
    "render_text",
    "result_line",
    "select_cases",
    "serve_client_check",
    "unknown_selectors",
]
