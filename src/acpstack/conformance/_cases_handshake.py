"""Handshake cases: initialize first, end of input, capability honesty, auth (version
negotiation: `_cases_negotiation.py`)."""

from __future__ import annotations

from typing import Any

from acpstack.conformance._catalog import case
from acpstack.conformance._context import NO_V1, UNSUPPORTED, Context
from acpstack.conformance._frames import obj
from acpstack.conformance._model import (
    DOCS,
    CaseSkip,
    Level,
    Outcome,
    failed,
    missing_answer,
    passed,
    warned,
)

INIT = f"{DOCS}/initialization"
EXTENSIBILITY = f"{DOCS}/extensibility"
UNKNOWN_SESSION = "acpstack-check-no-such-session"


@case(
    "init.before-initialize",
    "a request before initialize is refused, and initialize still works afterwards",
    group="negotiation",
    rule="Clients MUST initialize the connection by calling the `initialize` method before a "
    "session can be created (a rule for the client: how the agent copes is robustness).",
    source=INIT,
    level=Level.ROBUSTNESS,
    expected="an error for session/new sent first; then a normal initialize",
    fix="Answer requests that arrive before initialize with an error (e.g. -32600) and keep "
    "reading: the client will initialize next.",
    stdio_only=True,  # remote transports decide this themselves (a WebSocket closes)
)
async def before_initialize(ctx: Context) -> Outcome:
    conn = await ctx.open()
    early = await ctx.new_session_reply(conn)
    got = ctx.show(conn, early)
    if early.status in ("timeout", "closed"):
        return missing_answer("session/new before initialize", early, got)
    reply = await ctx.initialize(conn)
    got += ctx.show(conn, reply)
    if reply.status == "error" and reply.code == UNSUPPORTED:
        raise CaseSkip(NO_V1)
    if reply.status != "result":
        return failed(f"initialize after the early request got {reply.describe()}", got)
    if early.status == "result":
        return warned("created a session before initialize (it should refuse)", got)
    return passed(f"refused ({early.describe()}), then initialized")


@case(
    "init.eof-exit",
    "the agent exits when its stdin closes",
    group="negotiation",
    rule="The client ends an agent by closing its stdin and then terminating it; the spec "
    "sets no MUST for the agent to exit by itself, but one that does ends cleanly (and "
    "leaves nothing behind when its client dies).",
    source=f"{DOCS}/transports#stdio",
    level=Level.SHOULD,
    expected="the process exits on its own within the grace period",
    fix="Exit when reading stdin returns end of file (cancel your work, flush stdout, exit).",
    stdio_only=True,
)
async def eof_exit(ctx: Context) -> Outcome:
    conn = await ctx.ready()
    await conn.close(eof_grace=ctx.options.eof_grace)
    if conn.exited_on_eof:
        return passed(f"exited {conn.exit_seconds or 0:.2f} s after stdin closed")
    return warned(
        f"still running {ctx.options.eof_grace:g} s after stdin closed (it was terminated)",
        [conn.exit_description()],
    )


@case(
    "init.response",
    "the initialize result is complete",
    group="handshake",
    rule="agentInfo (name, version) is sent to the client; it will be required in future "
    "versions of the protocol.",
    source=INIT,
    level=Level.SHOULD,
    expected="protocolVersion, agentCapabilities and agentInfo",
    fix="Fill in agentInfo with your agent's name and version.",
)
async def init_response(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    result = conn.initialize
    missing = [k for k in ("agentCapabilities", "agentInfo") if k not in result]
    if "agentInfo" in missing:
        return warned("no agentInfo in the initialize result", [str(result)[:400]])
    if missing:
        return warned(f"missing {', '.join(missing)} (defaults apply)", [str(result)[:400]])
    return passed("protocolVersion, agentCapabilities and agentInfo present")


@case(
    "auth.terminal-gate",
    "no terminal auth method is offered to a client that did not ask for them",
    group="handshake",
    rule="Agents MUST advertise this method [terminal authentication] only when the client "
    "enabled its terminal authentication capability (clientCapabilities.auth.terminal).",
    source="schema $defs/AuthMethodTerminal",
    level=Level.MUST,
    expected='no authMethods entry with type "terminal"',
    fix="Offer terminal login methods only when clientCapabilities.auth.terminal is true.",
)
async def auth_terminal_gate(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    methods = conn.initialize.get("authMethods") or []
    terminal = [m for m in methods if isinstance(m, dict) and m.get("type") == "terminal"]
    if terminal:
        return failed("offered terminal auth methods unasked", [str(m) for m in terminal])
    return passed(f"{len(methods)} auth method(s), none of type terminal")


@case(
    "auth.flow",
    "authentication is required only when auth methods are advertised",
    group="handshake",
    rule="session/new may fail with -32000 (authentication required) until the client calls "
    "authenticate with one of the advertised authMethods.",
    source=f"{INIT}#authentication",
    level=Level.SHOULD,
    expected="session/new succeeds, or fails with -32000 when authMethods is not empty; "
    "authenticate with an unknown method id is refused",
    fix="Advertise the auth methods you require; answer -32000 only when one is needed; "
    "refuse authenticate for ids you did not advertise.",
)
async def auth_flow(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    methods = conn.initialize.get("authMethods") or []
    reply = await ctx.new_session_reply(conn)
    got = ctx.show(conn, reply)
    if reply.status == "error" and reply.code == -32000 and not methods:
        return failed("session/new demands authentication, but authMethods is empty", got)
    if reply.status in ("timeout", "closed"):
        return failed(f"session/new got {reply.describe()}", got)
    if not methods:
        return passed("no authentication advertised or required")
    bogus = await conn.request(
        "authenticate", {"methodId": "acpstack-check-no-such-method"}, timeout=ctx.options.timeout
    )
    got += ctx.show(conn, bogus)
    if bogus.status == "result":
        return warned("authenticate accepted a method id it never advertised", got)
    if bogus.status != "error":
        return failed(f"authenticate with an unknown id got {bogus.describe()}", got)
    state = "required (-32000)" if reply.status == "error" else "not required for session/new"
    return passed(f"{len(methods)} method(s) advertised; authentication {state}")


def _optional_methods(ctx: Context, init: dict[str, Any]) -> list[tuple[str, bool, Any]]:
    """(method, advertised?, params) for the optional agent methods."""
    caps = obj(init.get("agentCapabilities"))
    session = obj(caps.get("sessionCapabilities"))
    auth = obj(caps.get("auth"))
    cwd = "/"
    target = {"sessionId": UNKNOWN_SESSION}
    methods: list[tuple[str, bool, Any]] = [
        ("session/load", caps.get("loadSession") is True, {**target, "cwd": cwd, "mcpServers": []}),
        ("session/list", session.get("list") is not None, {}),
        ("session/resume", session.get("resume") is not None, {**target, "cwd": cwd}),
        ("session/close", session.get("close") is not None, target),
        ("session/delete", session.get("delete") is not None, target),
        ("logout", auth.get("logout") is not None, {}),
    ]
    if ctx.options.unstable:
        methods += [
            ("session/fork", session.get("fork") is not None, {**target, "cwd": cwd}),
            ("providers/list", caps.get("providers") is not None, {}),
            ("nes/start", caps.get("nes") is not None, {}),
        ]
    return methods


@case(
    "caps.unadvertised-methods",
    "optional methods the agent did not advertise answer -32601",
    group="handshake",
    rule="Capabilities omitted are unsupported, and the client MUST NOT call their methods "
    "(a rule for the client). An agent that answers one anyway breaks no rule, but no "
    "client will use it: advertise what you implement, refuse the rest with -32601.",
    source=f"{INIT}#agent-capabilities",
    level=Level.MAY,
    expected="-32601 for every optional method whose capability is not advertised",
    fix="Advertise every optional method you implement (loadSession, sessionCapabilities, "
    "auth.logout); answer the others with -32601.",
)
async def unadvertised_methods(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    answered: list[str] = []
    other: list[str] = []
    probed = []
    for method, advertised, params in _optional_methods(ctx, conn.initialize):
        if advertised:
            continue
        probed.append(method)
        reply = await conn.request(method, params, timeout=ctx.options.timeout)
        if reply.status == "error" and reply.code == -32601:
            continue
        line = f"{method}: {reply.describe()}"
        (answered if reply.status == "result" else other).append(line)
        ctx.require_alive(conn, method)
    if not probed:
        return passed("every optional method is advertised")
    if answered:
        return warned(
            "answers methods it does not advertise (clients will not call them)", answered + other
        )
    if other:
        return warned("refused, but not with -32601", other)
    return passed(f"-32601 for {', '.join(probed)}")


async def _expect_method_not_found(ctx: Context, method: str) -> Outcome:
    conn = await ctx.shared()
    reply = await conn.request(method, {}, timeout=ctx.options.timeout)
    got = ctx.show(conn, reply)
    if reply.status == "error" and reply.code == -32601:
        return passed("answered -32601")
    if reply.status in ("timeout", "closed"):
        return missing_answer(method, reply, got)
    return warned(f"{method} got {reply.describe()}", got)


@case(
    "caps.unknown-method",
    "an unknown method answers -32601",
    group="handshake",
    rule="The Server MUST reply with a Response; -32601 (Method not found) is JSON-RPC's "
    "code for a method that does not exist (a code the spec defines, not a MUST).",
    source="https://www.jsonrpc.org/specification#error_object",
    level=Level.SHOULD,
    expected="error -32601 with the request's id",
    fix="Answer every request you cannot handle with -32601 (Method not found).",
)
async def unknown_method(ctx: Context) -> Outcome:
    return await _expect_method_not_found(ctx, "acpstack/no_such_method")


@case(
    "caps.extension-method",
    "an unknown `_` extension request answers -32601",
    group="handshake",
    rule="Upon receiving a custom request, implementations MUST respond accordingly with the "
    'provided id; if they do not recognize it, they should respond with the standard "Method '
    'not found" error (a SHOULD).',
    source=f"{EXTENSIBILITY}#custom-requests",
    level=Level.SHOULD,
    expected="error -32601 with the request's id",
    fix="Answer unknown `_` requests with -32601 instead of ignoring them.",
)
async def extension_method(ctx: Context) -> Outcome:
    return await _expect_method_not_found(ctx, "_acpstack/no_such_method")


@case(
    "caps.unknown-notification",
    "unknown notifications are ignored silently",
    group="handshake",
    rule="The Server MUST NOT reply to a Notification (JSON-RPC 2.0); implementations "
    "SHOULD ignore unrecognized notifications.",
    source=f"https://www.jsonrpc.org/specification#notification; "
    f"{EXTENSIBILITY}#custom-notifications",
    level=Level.MUST,
    expected="no response to the notifications; later requests still answered",
    fix="Never answer a message without an id; ignore notifications you do not know.",
)
async def unknown_notification(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    start = conn.probe.last_seq
    conn.probe.notify("_acpstack/notice", {"note": "ignore me"})
    conn.probe.notify("acpstack/notice", {"note": "ignore me"})
    conn.probe.notify("session/cancel", {"sessionId": UNKNOWN_SESSION})
    await ctx.alive_check(conn, "unknown notifications")
    answers = [f for f in conn.probe.since(start) if f.is_response and f.message.get("id") is None]
    if answers:
        return failed("answered a notification", [f.show() for f in answers])
    return passed("ignored, and still serving")
