"""Cases for a proxy-chain component (`acpstack check agent --proxy`): the checker is its
conductor and, through `proxy/successor`, its successor (the simulated client answers the
forwarded `initialize` like an agent would)."""

from __future__ import annotations

from typing import Any

from acpstack.conformance._catalog import case
from acpstack.conformance._context import Context
from acpstack.conformance._model import Level, Outcome, failed, passed, skipped

RFD = "https://agentclientprotocol.com/rfds/proxy-chains"
MEMO = "proxy.initialize"


async def _initialized(ctx: Context) -> dict[str, Any]:
    """One `proxy/initialize` exchange, shared by the cases below."""
    found: dict[str, Any] | None = ctx.memo.get(MEMO)
    if found is None:
        conn = await ctx.open(validate=False)
        params = {
            "protocolVersion": 1,
            "clientCapabilities": conn.client.capabilities,
            "clientInfo": {"name": "acpstack-check", "version": "1"},
        }
        reply = await conn.request("proxy/initialize", params, timeout=ctx.options.timeout)
        found = {"conn": conn, "reply": reply, "forwarded": list(conn.client.successor_requests)}
        ctx.memo[MEMO] = found
    return found


def _not_a_proxy(ctx: Context) -> Outcome | None:
    return None if ctx.options.proxy else skipped("not checking a proxy (pass --proxy)")


@case(
    "proxy.initialize",
    "answers proxy/initialize",
    group="proxy",
    rule="The conductor MUST send proxy/initialize to every proxy (same params as initialize); "
    "a component started as a proxy answers it like initialize (UNSTABLE).",
    source=RFD,
    level=Level.MUST,
    expected="an InitializeResponse with a protocolVersion",
    fix="Handle proxy/initialize: forward initialize to your successor through "
    "proxy/successor and answer with what comes back.",
    unstable=True,
)
async def answers_initialize(ctx: Context) -> Outcome:
    if (skip := _not_a_proxy(ctx)) is not None:
        return skip
    got = await _initialized(ctx)
    reply = got["reply"]
    if reply.status != "result" or not isinstance(reply.result, dict):
        return failed(f"proxy/initialize got {reply.describe()}", ctx.show(got["conn"], reply))
    if not isinstance(reply.result.get("protocolVersion"), int):
        return failed("the answer has no protocolVersion", ctx.show(got["conn"], reply))
    return passed(f"answered with protocolVersion {reply.result['protocolVersion']}")


@case(
    "proxy.forwards_initialize",
    "forwards initialize to its successor before answering",
    group="proxy",
    rule="Before answering proxy/initialize successfully, a proxy MUST forward an initialize "
    "request to its successor through proxy/successor (UNSTABLE).",
    source=RFD,
    level=Level.MUST,
    expected="a proxy/successor request wrapping initialize, sent before the answer",
    fix="Send proxy/successor {method: initialize, params} and wait for its answer before "
    "answering proxy/initialize.",
    unstable=True,
)
async def forwards_initialize(ctx: Context) -> Outcome:
    if (skip := _not_a_proxy(ctx)) is not None:
        return skip
    got = await _initialized(ctx)
    reply, forwarded = got["reply"], got["forwarded"]
    inits = [f for f in forwarded if (f.params or {}).get("method") == "initialize"]
    if not inits:
        return failed(
            "no initialize was forwarded through proxy/successor", ctx.show(got["conn"], reply)
        )
    if reply.frame is not None and inits[0].seq > reply.frame.seq:
        return failed("initialize was forwarded after the answer", ctx.show(got["conn"], reply))
    return passed("initialize forwarded first")


@case(
    "proxy.keeps_version",
    "does not change protocolVersion",
    group="proxy",
    rule="A proxy MUST NOT change protocolVersion: it forwards the version it was given and "
    "answers with its successor's (UNSTABLE).",
    source=RFD,
    level=Level.MUST,
    expected="protocolVersion 1 forwarded and answered",
    fix="Forward the initialize params' protocolVersion unchanged and answer with the one "
    "your successor chose.",
    unstable=True,
)
async def keeps_version(ctx: Context) -> Outcome:
    if (skip := _not_a_proxy(ctx)) is not None:
        return skip
    got = await _initialized(ctx)
    reply, forwarded = got["reply"], got["forwarded"]
    inits = [f for f in forwarded if (f.params or {}).get("method") == "initialize"]
    sent = ((inits[0].params or {}).get("params") or {}).get("protocolVersion") if inits else None
    answered = reply.result.get("protocolVersion") if isinstance(reply.result, dict) else None
    if inits and sent != 1:
        return failed(f"forwarded protocolVersion {sent!r}, not 1", ctx.show(got["conn"], reply))
    if answered != 1:
        return failed(f"answered protocolVersion {answered!r}, not 1", ctx.show(got["conn"], reply))
    return passed("protocolVersion 1 kept")
