"""Cases for unstable methods (only with --unstable): run only when the agent advertises them."""

from __future__ import annotations

from acpstack.conformance._catalog import case
from acpstack.conformance._context import Context
from acpstack.conformance._model import Level, Outcome, failed, passed, skipped

RFDS = "https://agentclientprotocol.com/rfds"


def _caps(ctx_init: dict[str, object]) -> dict[str, object]:
    caps = ctx_init.get("agentCapabilities")
    return caps if isinstance(caps, dict) else {}


@case(
    "unstable.fork",
    "session/fork gives a new session (when advertised)",
    group="unstable",
    rule="session/fork answers the sessionId of a new session that starts from the forked "
    "one (UNSTABLE).",
    source=f"{RFDS}/session-fork",
    level=Level.SHOULD,
    expected="a result with a sessionId different from the original",
    fix="Answer session/fork with a new session id, or stop advertising sessionCapabilities.fork.",
    unstable=True,
)
async def fork(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    session = _caps(conn.initialize).get("sessionCapabilities")
    if not isinstance(session, dict) or session.get("fork") is None:
        return skipped("sessionCapabilities.fork is not advertised")
    session_id = await ctx.new_session(conn)
    params = {"sessionId": session_id, "cwd": str(ctx.workspace(conn)), "mcpServers": []}
    reply = await conn.request("session/fork", params, timeout=ctx.options.timeout)
    result = reply.result
    if reply.status != "result" or not isinstance(result, dict):
        return failed(f"session/fork got {reply.describe()}", ctx.show(conn, reply))
    if result.get("sessionId") in (None, session_id):
        return failed("the fork has no new session id", ctx.show(conn, reply))
    return passed(f"forked into {result['sessionId']!r}")


@case(
    "unstable.providers",
    "providers/list answers (when advertised)",
    group="unstable",
    rule="providers/list returns the configurable LLM providers (UNSTABLE).",
    source=f"{RFDS}/custom-llm-endpoint",
    level=Level.SHOULD,
    expected="a result with a providers array",
    fix="Answer providers/list, or stop advertising the providers capability.",
    unstable=True,
)
async def providers(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    if _caps(conn.initialize).get("providers") is None:
        return skipped("the providers capability is not advertised")
    reply = await conn.request("providers/list", {}, timeout=ctx.options.timeout)
    result = reply.result
    if reply.status != "result" or not isinstance(result, dict):
        return failed(f"providers/list got {reply.describe()}", ctx.show(conn, reply))
    if not isinstance(result.get("providers"), list):
        return failed("no providers array", ctx.show(conn, reply))
    return passed(f"{len(result['providers'])} provider(s)")
