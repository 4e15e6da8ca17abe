"""Whole-run cases: they look at every frame the agent wrote during the check (plus one
connection without client capabilities), and report known deviations as warnings."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from acpstack.conformance._catalog import case
from acpstack.conformance._client_sim import NO_CAPABILITIES
from acpstack.conformance._context import Context
from acpstack.conformance._frames import NOT_JSON, Frame, show_all
from acpstack.conformance._model import DOCS, Level, Outcome, failed, passed, warned

SCHEMA_SOURCE = "https://github.com/agentclientprotocol/agent-client-protocol/tree/main/schema"
MAX_SHOWN = 25


def _agent_frames(ctx: Context) -> Iterator[Frame]:
    for log in ctx.logs:
        yield from (f for f in log.frames if f.direction == "in")


def _shown_agent_frames(ctx: Context, keep: Callable[[Frame], bool]) -> list[str]:
    """The agent's frames that `keep` picks, as a case shows them."""
    return [frame.show(200) for frame in _agent_frames(ctx) if keep(frame)]


def _results(ctx: Context) -> Iterator[tuple[Frame, dict[str, object]]]:
    for frame in _agent_frames(ctx):
        result = frame.message.get("result") if frame.is_response else None
        if isinstance(result, dict):
            yield frame, result


@case(
    "schema.agent-messages",
    "every message the agent sent validates against the official schema",
    group="wire",
    rule="Requests, notifications and responses follow the ACP JSON Schema of their method "
    "(checked per method against the vendored schema's $defs); each method goes one way "
    "(its `x-side`): an agent never sends the client's methods (initialize, session/new, "
    "session/prompt...).",
    source=SCHEMA_SOURCE,
    level=Level.SCHEMA,
    expected="no schema violation in any message, and no method of the client",
    fix="Fix each field at the JSON path shown; the $defs name says which schema type applies. "
    "A method the client sends (at $.method) means the agent wrote what it received back to "
    "stdout (an echo, a logger or a proxy writing to the wrong stream) or uses a client "
    "library: send only agent messages.",
)
async def agent_messages(ctx: Context) -> Outcome:
    problems = [p for log in ctx.logs for p in log.schema]
    count = sum(1 for _ in _agent_frames(ctx))
    if not problems:
        return passed(f"{count} message(s) checked, all valid")
    shown = [f"{p.violation}  [frame: {p.frame.show(160)}]" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        shown.append(f"... and {len(problems) - MAX_SHOWN} more")
    return failed(f"{len(problems)} violation(s) in {count} message(s)", shown)


@case(
    "wire.stdout-only-frames",
    "the agent writes only JSON-RPC messages to stdout",
    group="wire",
    rule="The agent MUST NOT write anything to its stdout that is not a valid ACP message; "
    "logs go to stderr.",
    source=f"{DOCS}/transports#stdio",
    level=Level.MUST,
    expected="every line on stdout is a JSON object",
    fix="Send logs and prints to stderr; write one compact JSON message per line to stdout.",
)
async def stdout_only_frames(ctx: Context) -> Outcome:
    bad = [f for f in _agent_frames(ctx) if f.message is NOT_JSON or not f.is_object]
    if bad:
        return failed(f"{len(bad)} line(s) that are not messages", show_all(bad, MAX_SHOWN))
    return passed("every line was a JSON-RPC message")


@case(
    "wire.responses-match",
    "every response answers one request of the checker, once",
    group="wire",
    rule="The id of a Response MUST be the same as the value of the id member in the "
    "Request Object it answers; the Server MUST reply with a Response to each request (one).",
    source="https://www.jsonrpc.org/specification#response_object",
    level=Level.MUST,
    expected="no response to an unknown id, no second response to one id",
    fix="Answer each request once, with its id; never invent responses.",
)
async def responses_match(ctx: Context) -> Outcome:
    unmatched = [f for log in ctx.logs for f in log.unmatched]
    duplicates = [f for log in ctx.logs for f in log.duplicates]
    if unmatched or duplicates:
        shown = [f"unknown id: {f.show(200)}" for f in unmatched]
        shown += [f"second answer: {f.show(200)}" for f in duplicates]
        return failed("responses that answer no request of the checker", shown[:MAX_SHOWN])
    return passed("every response matched a request")


@case(
    "caps.client-gates",
    "the agent calls client methods only when the client offered them",
    group="wire",
    rule="If readTextFile or writeTextFile is false or not present, the Agent MUST NOT attempt "
    "to call the corresponding filesystem method; if terminal is false, no terminal method; "
    "elicitation only in an advertised mode.",
    source=f"{DOCS}/file-system#checking-support",
    level=Level.MUST,
    expected="no fs/*, terminal/* or elicitation/create call the capabilities do not allow "
    "(in the whole run, and in a turn with a client that offers none)",
    fix="Check the client's capabilities from initialize before each fs, terminal or "
    "elicitation call; work without them (read files yourself) when they are off.",
)
async def client_gates(ctx: Context) -> Outcome:
    conn = await ctx.ready(capabilities=NO_CAPABILITIES)
    session_id = await ctx.new_session(conn)
    turn = await ctx.turn(conn, session_id)
    violations = [v for log in ctx.logs if log.client for v in log.client.gate_violations]
    if violations:
        shown = [f"without {v.capability}: {v.frame.show(200)}" for v in violations]
        return failed(f"{len(violations)} call(s) the client did not allow", shown[:MAX_SHOWN])
    if turn.reply.status != "result":
        return warned(
            "no forbidden call, but the turn failed when the client offered no fs and no "
            f"terminal ({turn.reply.describe()}): agents SHOULD support every combination "
            "of client capabilities",
            show_all(turn.frames()),
        )
    return passed("no call outside the advertised capabilities")


@case(
    "caps.terminal-release",
    "every terminal the agent created is released",
    group="wire",
    rule="The Agent MUST release the terminal using terminal/release when it's no longer needed.",
    source=f"{DOCS}/terminals#releasing-terminals",
    level=Level.MUST,
    expected="terminal/release for each terminal/create",
    fix="Release every terminal (also after kill, errors and cancellation).",
)
async def terminal_release(ctx: Context) -> Outcome:
    created = [
        ((name, log.client.label), released)
        for log in ctx.logs
        if log.client
        for name, released in log.client.terminals.items()
    ]
    leaked = [f"{name} (case {label})" for (name, label), released in created if not released]
    if leaked:
        return failed(f"{len(leaked)} of {len(created)} terminal(s) never released", leaked)
    return passed(f"{len(created)} terminal(s) created, all released")


def _deviation(found: list[str], what: str, count_label: str) -> Outcome:
    if found:
        return warned(f"{what} ({len(found)} time(s))", found[:MAX_SHOWN])
    return passed(f"no {count_label}")


@case(
    "deviation.legacy-models",
    "no legacy `models` field in session results",
    group="wire",
    rule="The unstable session/set_model and `models` were removed on 2026-06-01; models are "
    'a config option with category "model".',
    source=f"{DOCS}/session-config-options",
    level=Level.DEVIATION,
    expected="no `models` in session/new, load or resume results",
    fix='Offer the model as a configOptions entry with category "model".',
)
async def legacy_models(ctx: Context) -> Outcome:
    found = [f.show(200) for f, result in _results(ctx) if "models" in result]
    return _deviation(found, "results carry the removed `models` field", "legacy models field")


@case(
    "deviation.env-var-auth",
    "no auth method of the dropped `env_var` type",
    group="wire",
    rule='Auth method types are "agent" (no type) and "terminal"; the unstable `env_var` type '
    "was dropped on 2026-08-20 (clients decode it as an agent method).",
    source=f"{DOCS}/initialization#authentication",
    level=Level.DEVIATION,
    expected="no authMethods entry with type env_var",
    fix="Describe the variable in an agent auth method's description, or use terminal auth.",
)
async def env_var_auth(ctx: Context) -> Outcome:
    found = []
    for _frame, result in _results(ctx):
        methods = result.get("authMethods")
        for method in methods if isinstance(methods, list) else []:
            if isinstance(method, dict) and method.get("type") == "env_var":
                found.append(str(method)[:200])
    return _deviation(found, "auth methods of type env_var", "env_var auth method")


@case(
    "deviation.custom-methods",
    "custom methods the agent sends start with `_`",
    group="wire",
    rule="Implementations MAY expose and call custom JSON-RPC requests as long as their name "
    "starts with an underscore (_).",
    source=f"{DOCS}/extensibility#extension-methods",
    level=Level.DEVIATION,
    expected="no request or notification from the agent outside ACP without a `_` prefix",
    fix="Prefix your own methods with `_` (e.g. `_myagent/status`).",
)
async def custom_methods(ctx: Context) -> Outcome:
    def unprefixed(frame: Frame) -> bool:
        method = frame.method
        if method is None or method.startswith(("_", "$/")):
            return False
        return not ctx.validator.known_method(method, "agent")

    found = []
    for frame in _agent_frames(ctx):
        if unprefixed(frame):
            # a method of the client's is no custom method: schema.agent-messages fails it
            mine = ctx.validator.known_method(str(frame.method), "client")
            note = "a method of the client (see schema.agent-messages): " if mine else ""
            found.append(note + frame.show(200))
    what = "agent methods outside ACP without a `_` prefix"
    return _deviation(found, what, "unprefixed custom method")


@case(
    "deviation.string-raw-output",
    "tool calls report rawOutput as structured JSON",
    group="wire",
    rule="rawOutput is any JSON value; several clients expect an object and show a string "
    "badly (a known deviation of real agents).",
    source=f"{DOCS}/tool-calls#updating",
    level=Level.DEVIATION,
    expected="rawOutput objects (or arrays) rather than plain strings",
    fix='Wrap textual output, e.g. {"output": "..."}, or send it as tool call content.',
)
async def string_raw_output(ctx: Context) -> Outcome:
    found = _shown_agent_frames(ctx, _has_string_raw_output)
    return _deviation(found, "tool calls with a string rawOutput", "string rawOutput")


def _has_string_raw_output(frame: Frame) -> bool:
    update = frame.params.get("update") if frame.update_kind else None
    return isinstance(update, dict) and isinstance(update.get("rawOutput"), str)
