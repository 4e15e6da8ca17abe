"""Bad input cases: each gets the right error (or none, for responses) and the agent keeps
serving. Each line is followed by a request whose answer proves the agent is still there."""

from __future__ import annotations

import json
from typing import Any

from acpstack.conformance._catalog import case
from acpstack.conformance._context import Context
from acpstack.conformance._frames import Frame
from acpstack.conformance._model import (
    DOCS,
    Level,
    Outcome,
    failed,
    missing_answer,
    passed,
    warned,
)
from acpstack.conformance._probe import id_key
from acpstack.conformance._target import Connection

JSONRPC = "https://www.jsonrpc.org/specification"
KEEP_SERVING = "Keep reading after a bad line: answer it with an error and go on."
OVERSIZED = 8 * 1024 * 1024
BIG_ID = 2**53 + 1


async def _send_bad(
    ctx: Context, conn: Connection, data: bytes, ids: tuple[Any, ...]
) -> list[Frame]:
    """Send one bad line; return the agent's responses carrying one of `ids` (null, or the
    id an agent may recover from the bad line)."""
    start = conn.probe.last_seq
    conn.probe.expect_answers(ids)
    conn.probe.send_raw(data)
    shown = data[:60].decode("utf-8", "replace")
    await ctx.alive_check(conn, f"the line {shown!r}")
    await conn.probe.quiet(ctx.options.settle, limit=ctx.options.settle * 2)
    keys = {id_key(i) for i in ids}
    return [
        f for f in conn.probe.since(start) if f.is_response and id_key(f.message.get("id")) in keys
    ]


def _grade(lines: list[tuple[bytes, list[Frame]]], code: int) -> Outcome:
    """pass: every line got error `code`; fail: some got another answer; warn: no answer."""
    wrong, silent = [], []
    for data, answers in lines:
        shown = data[:60].decode("utf-8", "replace")
        codes = [(f.message.get("error") or {}).get("code") for f in answers]
        if not answers:
            silent.append(f"{shown!r}: no error response")
        elif codes != [code]:
            wrong.append(f"{shown!r}: " + "; ".join(f.show() for f in answers))
    if wrong:
        return failed(f"wrong answer (expected error {code})", wrong + silent)
    if silent:
        return warned(f"no error {code} response (JSON-RPC asks for one); still serving", silent)
    return passed(f"error {code} for each of {len(lines)} line(s), and still serving")


@case(
    "robust.invalid-json",
    "invalid JSON gets -32700 and the agent keeps serving",
    group="robustness",
    rule="Invalid JSON was received by the server: Parse error -32700, with id null (or the "
    "id, when the agent could still read it).",
    source=f"{JSONRPC}#error_object",
    level=Level.ROBUSTNESS,
    expected="error -32700 (id null, or the line's id); later requests answered",
    fix=KEEP_SERVING,
    stdio_only=True,
)
async def invalid_json(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    lines = [
        (b'{"jsonrpc": "2.0", "id": 9001, "method": "session/new"\n', (None, 9001)),
        (b"this is not json\n", (None,)),
    ]
    return _grade([(line, await _send_bad(ctx, conn, line, ids)) for line, ids in lines], -32700)


@case(
    "robust.not-an-object",
    "JSON that is not a request object gets -32600 and the agent keeps serving",
    group="robustness",
    rule="The JSON sent is not a valid Request object: Invalid Request -32600, with id null. "
    "ACP v1 messages are single JSON objects.",
    source=f"{JSONRPC}#error_object",
    level=Level.ROBUSTNESS,
    expected="error -32600 with id null for each line",
    fix=KEEP_SERVING,
    stdio_only=True,
)
async def not_an_object(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    lines = [b"42\n", b'"hello"\n', b"null\n", b"[]\n"]
    return _grade([(line, await _send_bad(ctx, conn, line, (None,))) for line in lines], -32600)


@case(
    "robust.wrong-jsonrpc",
    'a message without jsonrpc "2.0" gets -32600',
    group="robustness",
    rule='A JSON-RPC 2.0 message MUST carry "jsonrpc": "2.0"; anything else is an Invalid '
    "Request (-32600).",
    source=f"{JSONRPC}#request_object",
    level=Level.ROBUSTNESS,
    expected="error -32600 (id 9101/9102 or null)",
    fix='Reject messages whose jsonrpc member is not exactly "2.0" with -32600.',
    stdio_only=True,
)
async def wrong_jsonrpc(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    lines = [
        (b'{"jsonrpc":"1.0","id":9101,"method":"_acpstack/ping","params":{}}\n', 9101),
        (b'{"id":9102,"method":"_acpstack/ping","params":{}}\n', 9102),
    ]
    graded = []
    lenient = []
    for line, rid in lines:
        answers = await _send_bad(ctx, conn, line, (None, rid))
        codes = [(f.message.get("error") or {}).get("code") for f in answers]
        if codes == [-32601]:
            lenient.append(f"{line[:50]!r}: handled as a valid request (-32601)")
        else:
            graded.append((line, answers))
    outcome = _grade(graded, -32600)
    if lenient and outcome.verdict == "pass":
        return warned("accepted messages that are not JSON-RPC 2.0", lenient)
    return outcome


@case(
    "robust.invalid-params",
    "requests with invalid params get -32602",
    group="robustness",
    rule="Invalid method parameter(s): -32602 Invalid params.",
    source=f"{JSONRPC}#error_object",
    level=Level.ROBUSTNESS,
    expected="error -32602 for session/new {cwd: 5} and for a prompt of 42",
    fix="Validate params against the schema and answer -32602 (not -32603, not a result).",
)
async def invalid_params(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    session_id = await ctx.new_session(conn)
    calls = [
        ("session/new", {"cwd": 5}),
        ("session/prompt", {"sessionId": session_id, "prompt": 42}),
    ]
    accepted: list[str] = []
    other: list[str] = []
    for method, params in calls:
        reply = await conn.request(method, params, timeout=ctx.options.timeout)
        ctx.require_alive(conn, f"invalid {method} params")
        if reply.status == "error" and reply.code == -32602:
            continue
        line = f"{method} {json.dumps(params)}: {reply.describe()}"
        (other if reply.status == "error" else accepted).append(line)
    if accepted:
        return failed("accepted invalid params", accepted + other)
    if other:
        return warned("refused, but not with -32602", other)
    return passed("-32602 for both")


@case(
    "robust.stray-response",
    "a response to nothing is ignored",
    group="robustness",
    rule="A response is never answered; one whose id matches no request the agent sent is dropped.",
    source=f"{JSONRPC}#response_object",
    level=Level.ROBUSTNESS,
    expected="no message about the stray responses; later requests answered",
    fix="Drop responses whose id you do not know (log them), never answer them.",
)
async def stray_response(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    lines = [
        (b'{"jsonrpc":"2.0","id":"acpstack-stray","result":{}}\n', "acpstack-stray"),
        (b'{"jsonrpc":"2.0","id":987654,"error":{"code":-32603,"message":"stray"}}\n', 987654),
    ]
    answered = []
    for line, rid in lines:
        answered += await _send_bad(ctx, conn, line, (rid,))
    if answered:
        return failed("answered a response", [f.show() for f in answered])
    return passed("ignored, and still serving")


@case(
    "robust.oversized-line",
    "an 8 MiB line does not kill the agent",
    group="robustness",
    rule="Prompts carry base64 images and audio, fs results carry whole files: a line can be "
    "megabytes long. The agent answers it (or refuses it) and keeps serving.",
    source=f"{DOCS}/transports#stdio",
    level=Level.ROBUSTNESS,
    expected="an answer to the 8 MiB request (here -32601: the method is unknown); then "
    "later requests answered",
    fix="Read lines of any length (asyncio's StreamReader stops at 64 KiB unless given a "
    "larger limit).",
    stdio_only=True,
)
async def oversized_line(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    params = {"data": "x" * OVERSIZED}
    line = json.dumps({"jsonrpc": "2.0", "id": 9301, "method": "_acpstack/big", "params": params})
    answers = await _send_bad(ctx, conn, line.encode() + b"\n", (9301, None))
    if not answers:
        return warned("no answer to the 8 MiB request (it was dropped); still serving")
    return passed(f"answered ({answers[0].show(120)}), and still serving")


@case(
    "robust.request-ids",
    "responses echo the request id exactly (string, integer, int64)",
    group="robustness",
    rule="The Server MUST reply with the same value in the Response object. RequestId is a "
    "string, an int64 integer or null.",
    source="schema $defs/RequestId",
    level=Level.MUST,
    expected="each answer carries the id of its request, with the same JSON type",
    fix="Keep the id as received (do not convert strings, keep 64-bit integers exact).",
)
async def request_ids(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    ids: tuple[Any, ...] = ("acpstack-λ-1", "9407", 9407, -3, BIG_ID)
    # a JSON parser that reads numbers as doubles answers the int64 id rounded: that is the
    # warning below, not a response to nothing
    conn.probe.expect_answers((int(float(BIG_ID)),))
    for rid in ids:
        conn.probe.send({"jsonrpc": "2.0", "id": rid, "method": "_acpstack/ping", "params": {}})
    await ctx.alive_check(conn, "requests with unusual ids")
    await conn.probe.quiet(ctx.options.settle, limit=ctx.options.settle * 2)
    wrong: list[str] = []
    big: list[str] = []
    for rid in ids:
        reply = await conn.probe.reply(rid, timeout=0)
        if reply.status not in ("result", "error"):
            (big if rid == BIG_ID else wrong).append(f"id {rid!r}: no answer carrying this id")
    if wrong:
        return failed("answers did not carry the request's id", wrong + big)
    if big:
        return warned("an id beyond 2^53 came back changed (JSON numbers as doubles)", big)
    return passed("every id echoed exactly")


@case(
    "robust.unknown-fields",
    "_meta is accepted, unknown fields are ignored",
    group="robustness",
    rule="_meta is part of every request's schema, and implementations MUST NOT make "
    "assumptions about values at _meta keys; no schema object forbids unknown fields, so "
    "receivers ignore them (senders MUST NOT add them, so refusing one is only a warning).",
    source=f"schema $defs/NewSessionRequest (_meta); {DOCS}/extensibility#the-meta-field",
    level=Level.SCHEMA,
    expected="session/new with _meta succeeds; with an unknown field too",
    fix="Ignore unknown fields (do not forbid additional properties when decoding).",
)
async def unknown_fields(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    meta = await ctx.new_session_reply(conn, _meta={"acpstack.check/probe": True})
    if meta.status == "error" and meta.code == -32000:
        return passed("refused for authentication only (-32000)")
    if meta.status in ("timeout", "closed"):
        return missing_answer("session/new with _meta", meta, ctx.show(conn, meta))
    if meta.status != "result":
        return failed(f"session/new with _meta got {meta.describe()}", ctx.show(conn, meta))
    extra = await ctx.new_session_reply(conn, acpstackUnknownField={"x": 1})
    if extra.status != "result":
        return warned(
            f"session/new with an unknown field got {extra.describe()} (a client must not "
            "send one, but receivers are expected to ignore unknown fields)",
            ctx.show(conn, extra),
        )
    return passed("accepted _meta and ignored an unknown field")
