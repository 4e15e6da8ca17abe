"""Version negotiation cases: `initialize` with protocol version 1, 2 (the v2 draft) and a
newer one nobody speaks yet, each on a fresh agent process.

The rules: v1's initialization docs (answer the requested version when supported, else
the latest one supported) and the v2 draft's schema, which sharpens them: the answer is
the highest version the agent supports at or below the one requested, and when there is
none, error -32022 "Unsupported protocol version" with `{requested, supported}`. A v1
agent answering 1 to a request for 2 negotiates down correctly; a v2-only agent answering
-32022 to a request for 1 does too.

Each answer is checked against the schema of the version it chose (the connection's
messages are not checked against v1's as they come: a v2 answer is not a v1 one).
"""

from __future__ import annotations

import functools
from typing import Any

from acpstack.conformance._catalog import case
from acpstack.conformance._context import CLIENT_INFO, Context
from acpstack.conformance._model import DOCS, Level, Outcome, failed, missing_answer, passed, warned
from acpstack.conformance._probe import Reply
from acpstack.conformance._schema import MessageValidator

INIT = f"{DOCS}/initialization"
V2_DOCS = f"{DOCS}/v2/initialization#version-negotiation"
V1_RULE = (
    "If the Agent supports the requested version, it MUST respond with the same version. "
    "Otherwise, the Agent MUST respond with the latest version it supports."
)
V2_RULE = (
    "v2 schema: the answer's protocolVersion is the highest protocol version supported by "
    "the agent that is at or below the version requested by the client; if no such version "
    "exists, initialization fails with error -32022 (Unsupported protocol version) whose "
    "data is {requested, supported}."
)
V2_SOURCE = (
    f"{V2_DOCS}; schema v2 $defs/InitializeResponse.protocolVersion and "
    "$defs/UnsupportedProtocolVersionErrorData"
)
FIX = (
    "Answer initialize with the highest version you speak at or below the requested one "
    "(the requested one when you speak it; a newer, unknown one gets your latest), and "
    "with error -32022 and data {requested, supported} only when you speak none of those."
)
#: The protocol versions that exist (a version above these is one nobody speaks yet).
KNOWN = (1, 2)
FUTURE = 99
UNSUPPORTED = -32022


def _params(version: int) -> dict[str, Any]:
    """`initialize` params for `version`, in the shape of the newest version at or below it
    (what a client of that version sends)."""
    if version >= 2:
        return {"protocolVersion": version, "info": CLIENT_INFO, "capabilities": {}}
    return {"protocolVersion": version, "clientCapabilities": {}, "clientInfo": CLIENT_INFO}


@functools.cache
def _validator(version: int, unstable: bool) -> MessageValidator:
    return MessageValidator(unstable=unstable, version=version)


def _schema_problems(ctx: Context, version: int, definition: str, payload: Any) -> list[str]:
    validator = _validator(version, ctx.options.unstable)
    found = validator.validate_payload(definition, payload)
    return [f"v{version} $defs/{definition} at {path}: {text}" for path, text in found]


async def _ask(ctx: Context, requested: int) -> tuple[Reply, list[str]]:
    conn = await ctx.open(validate=False)
    reply = await conn.request("initialize", _params(requested), timeout=ctx.options.timeout)
    info = reply.result.get("agentInfo") if isinstance(reply.result, dict) else None
    if ctx.agent_info is None and isinstance(info, dict):
        ctx.agent_info = info
    # A v2 conversation is checked by the v2 group (_cases_v2.py) on connections of its own.
    sent = f"-> initialize with protocolVersion {requested}, in v{min(requested, 2)}'s shape"
    return reply, [sent, *ctx.show(conn, reply)]


def judge(ctx: Context, requested: int, reply: Reply, got: list[str]) -> Outcome:
    """The verdict on the answer to `initialize` with `requested` (see the module doc)."""
    expected = _expected(requested)
    if reply.status == "error" and reply.code == UNSUPPORTED:
        return _judge_unsupported(ctx, requested, reply.error.get("data"), got, expected)
    if reply.status in ("timeout", "closed"):
        return missing_answer(f"initialize with protocolVersion {requested}", reply, got)
    if reply.status != "result" or not isinstance(reply.result, dict):
        return failed(f"initialize with protocolVersion {requested} got {reply.describe()}", got)
    version = reply.result.get("protocolVersion")
    if type(version) is not int or version not in KNOWN:
        return failed(
            f"answered protocolVersion {version!r}: no such protocol version exists "
            f"(there are {' and '.join(map(str, KNOWN))})",
            got,
            expected,
        )
    if version > requested:
        return warned(
            f"answered {version} to a client that asked for {requested}: v1's rule allows "
            f"the latest version supported, the v2 draft asks for -32022 instead (this "
            f"client cannot go on in {version})",
            got,
            expected,
        )
    problems = _schema_problems(ctx, version, "InitializeResponse", reply.result)
    if problems:
        return failed(f"answered {version}, but not in v{version}'s shape", problems + got)
    if requested not in KNOWN:
        return passed(f"answered {version}, a version it speaks below the unknown {requested}")
    if version < requested:
        return passed(f"answered {version}: negotiated down to a version it speaks")
    return passed(f"answered {version}")


def _judge_unsupported(
    ctx: Context, requested: int, data: Any, got: list[str], expected: str
) -> Outcome:
    problems = _schema_problems(ctx, 2, "UnsupportedProtocolVersionErrorData", data)
    if problems or not isinstance(data, dict):
        return failed("answered -32022 without valid {requested, supported} data", got + problems)
    supported = data["supported"]
    if data["requested"] != requested:
        return failed(f"answered -32022 with requested {data['requested']!r}", got, expected)
    fitting = [v for v in supported if v <= requested]
    if fitting:
        return failed(
            f"answered -32022, yet lists {max(fitting)} as supported, at or below the "
            f"{requested} requested: it must answer with {max(fitting)}",
            got,
            expected,
        )
    if not supported:
        return failed("answered -32022 with an empty `supported` list", got, expected)
    return passed(
        f"answered -32022 {{requested: {requested}, supported: {supported}}}: "
        f"it speaks no version at or below {requested}"
    )


def _expected(requested: int) -> str:
    if requested == 1:
        return (
            "protocolVersion 1, or -32022 {requested: 1, supported: [...]} from an agent "
            "that speaks only newer versions"
        )
    if requested == 2:
        return (
            "protocolVersion 2 in v2's shape (an agent that speaks v2), or 1 in v1's shape "
            "(a v1-only agent negotiates down)"
        )
    return (
        "the highest version the agent speaks (1 or 2): never an error, never the "
        f"{requested} asked for"
    )


@case(
    "init.protocol-v1",
    "initialize with protocolVersion 1 is answered with 1 (or -32022 by a v2-only agent)",
    group="negotiation",
    rule=f"{V1_RULE} {V2_RULE}",
    source=f"{INIT}#version-negotiation; {V2_SOURCE}",
    level=Level.MUST,
    expected=_expected(1),
    fix=FIX,
)
async def protocol_v1(ctx: Context) -> Outcome:
    reply, got = await _ask(ctx, 1)
    return judge(ctx, 1, reply, got)


@case(
    "init.protocol-v2",
    "initialize with protocolVersion 2 (v2's shape) is answered with 2, or 1 by a v1 agent",
    group="negotiation",
    rule=V2_RULE,
    source=V2_SOURCE,
    level=Level.SCHEMA,
    expected=_expected(2),
    fix=FIX,
)
async def protocol_v2(ctx: Context) -> Outcome:
    reply, got = await _ask(ctx, 2)
    return judge(ctx, 2, reply, got)


@case(
    "init.protocol-future",
    f"initialize with an unknown future version ({FUTURE}) is answered with a supported one",
    group="negotiation",
    rule=f"{V1_RULE} {V2_RULE} A request for a newer version than the agent knows is "
    "answered with the latest version it supports.",
    source=f"{INIT}#version-negotiation; {V2_SOURCE}",
    level=Level.MUST,
    expected=_expected(FUTURE),
    fix=FIX,
)
async def protocol_future(ctx: Context) -> Outcome:
    reply, got = await _ask(ctx, FUTURE)
    return judge(ctx, FUTURE, reply, got)
