"""Session cases: new, load, resume, list, close, delete, modes and config options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acpstack.conformance._catalog import case
from acpstack.conformance._context import TURN_UPDATES, Context
from acpstack.conformance._frames import Frame
from acpstack.conformance._model import (
    DOCS,
    CaseSkip,
    Level,
    Outcome,
    failed,
    missing_answer,
    passed,
    skipped,
    warned,
)
from acpstack.conformance._probe import Reply
from acpstack.conformance._target import Connection

SETUP = f"{DOCS}/session-setup"
MODES = f"{DOCS}/session-modes"
CONFIG = f"{DOCS}/session-config-options"


def _session_caps(conn: Connection) -> dict[str, Any]:
    caps = conn.initialize.get("agentCapabilities")
    session = caps.get("sessionCapabilities") if isinstance(caps, dict) else None
    return session if isinstance(session, dict) else {}


def _advertised(conn: Connection, name: str) -> bool:
    if name == "load":
        caps = conn.initialize.get("agentCapabilities")
        return isinstance(caps, dict) and caps.get("loadSession") is True
    return _session_caps(conn).get(name) is not None


async def _new_session_result(ctx: Context, conn: Connection) -> tuple[str, dict[str, Any]]:
    reply = await ctx.new_session_reply(conn)
    if reply.status == "result" and isinstance(reply.result, dict):
        session_id = reply.result.get("sessionId")
        if isinstance(session_id, str):
            return session_id, reply.result
    await ctx.new_session(conn)  # raises the right skip
    raise CaseSkip("session/new did not give a session")


@case(
    "session.new",
    "session/new answers a session id",
    group="sessions",
    rule="The Agent MUST respond with a unique Session ID that identifies this conversation.",
    source=f"{SETUP}#creating-a-session",
    level=Level.MUST,
    expected="a result with a string sessionId",
    fix="Answer session/new with {sessionId, ...} (modes and configOptions optional).",
)
async def session_new(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    reply = await ctx.new_session_reply(conn)
    got = ctx.show(conn, reply)
    if reply.status == "error" and reply.code == -32000:
        return skipped("the agent requires authentication; rerun with --auth METHOD_ID")
    result = reply.result
    if reply.status != "result" or not isinstance(result, dict):
        return failed(f"session/new got {reply.describe()}", got)
    if not isinstance(result.get("sessionId"), str):
        return failed("no string sessionId in the result", got)
    return passed(f"session {result['sessionId']!r}")


@case(
    "session.unique-ids",
    "every session/new gives a different session id",
    group="sessions",
    rule="The Agent MUST respond with a unique Session ID that identifies this conversation.",
    source=f"{SETUP}#session-id",
    level=Level.MUST,
    expected="three different session ids for three session/new requests",
    fix="Generate session ids that never repeat (e.g. UUIDs).",
)
async def unique_ids(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    ids = [await ctx.new_session(conn) for _ in range(3)]
    if len(set(ids)) != len(ids):
        return failed("session ids repeat", ids)
    return passed("three different ids")


@case(
    "session.absolute-cwd",
    "session/new with a relative cwd is refused",
    group="sessions",
    rule="The working directory MUST be an absolute path (a rule for the client: how the "
    "agent copes with a relative one is robustness).",
    source=f"{SETUP}#working-directory",
    level=Level.ROBUSTNESS,
    expected="an error (ideally -32602 Invalid params)",
    fix="Check that cwd is absolute and answer -32602 when it is not.",
)
async def absolute_cwd(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    reply = await ctx.new_session_reply(conn, cwd="relative/dir")
    got = ctx.show(conn, reply)
    if reply.status == "error":
        return passed(f"refused: {reply.describe()}")
    if reply.status == "result":
        return warned("accepted a relative cwd", got)
    return failed(f"session/new got {reply.describe()}", got)


@case(
    "session.unknown-id",
    "a prompt for a session that does not exist is refused",
    group="sessions",
    rule="Agents MAY return an error for a session they do not know (the spec sets no MUST "
    "here); clients rely on one to tell a lost session from a live one.",
    source=f"{SETUP}#session-id",
    level=Level.MAY,
    expected="an error response (e.g. -32602 or -32002)",
    fix="Answer requests naming an unknown session with an error.",
)
async def unknown_id(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    turn = await ctx.turn(conn, "acpstack-check-no-such-session")
    got = [f.show() for f in turn.frames()][:8]
    if turn.reply.status == "error":
        return passed(f"refused: {turn.reply.describe()}")
    if turn.reply.status == "result":
        return warned("answered a prompt for a session that does not exist", got)
    return missing_answer("session/prompt for an unknown session", turn.reply, got)


def _mode_ids(modes: dict[str, Any]) -> list[str]:
    available = modes.get("availableModes")
    items = available if isinstance(available, list) else []
    return [str(m["id"]) for m in items if isinstance(m, dict) and isinstance(m.get("id"), str)]


@case(
    "session.modes",
    "session modes are consistent and can be switched",
    group="sessions",
    rule="currentModeId names the current mode, one of availableModes; session/set_mode "
    "switches to an advertised mode. No MUST: an agent may refuse a mode (e.g. in a "
    "folder it does not trust), so what this finds is a warning.",
    source=f"{MODES}#initial-state",
    level=Level.SHOULD,
    expected="currentModeId among availableModes; set_mode answered {}; unknown mode refused",
    fix="Keep currentModeId within availableModes, accept set_mode for every advertised mode, "
    "and refuse mode ids you did not advertise.",
)
async def modes(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    session_id, result = await _new_session_result(ctx, conn)
    state = result.get("modes")
    if not isinstance(state, dict):
        return skipped("the agent advertises no modes")
    ids = _mode_ids(state)
    current = state.get("currentModeId")
    if current not in ids:
        return warned(f"currentModeId {current!r} is not among {ids}", [str(state)[:400]])
    other = next((m for m in ids if m != current), current)
    switch = await conn.request(
        "session/set_mode", {"sessionId": session_id, "modeId": other}, timeout=ctx.options.timeout
    )
    got = ctx.show(conn, switch)
    if switch.status in ("timeout", "closed"):
        return missing_answer(f"set_mode to {other!r}", switch, got)
    if switch.status != "result":
        return warned(f"refused set_mode to the advertised {other!r}: {switch.describe()}", got)
    bogus = await conn.request(
        "session/set_mode",
        {"sessionId": session_id, "modeId": "acpstack-check-no-such-mode"},
        timeout=ctx.options.timeout,
    )
    got += ctx.show(conn, bogus)
    if bogus.status == "result":
        return warned("accepted a mode id it never advertised", got)
    if bogus.status != "error":
        return missing_answer("set_mode to an unknown mode", bogus, got)
    return passed(f"{len(ids)} modes; switched to {other!r}; unknown mode refused")


def _option_values(option: dict[str, Any]) -> list[Any]:
    values: list[Any] = []
    options = option.get("options")
    for item in options if isinstance(options, list) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("options"), list):  # a group
            values += [o.get("value") for o in item["options"] if isinstance(o, dict)]
        else:
            values.append(item.get("value"))
    return values


def _option_problems(options: list[Any]) -> list[str]:
    problems = []
    for option in options:
        if not isinstance(option, dict):
            continue
        if option.get("type") == "boolean":
            problems.append(
                f"{option.get('id')!r}: a boolean option, which the client did not accept"
            )
        elif option.get("type") == "select" and option.get("currentValue") not in _option_values(
            option
        ):
            problems.append(f"{option.get('id')!r}: currentValue is not among its options")
    return problems


@case(
    "session.config-options",
    "session config options are consistent and can be set",
    group="sessions",
    rule="A select option's currentValue is one of its options; set_config_option answers "
    "the complete list of options with their current values; boolean options only when the "
    "client advertised session.configOptions.boolean. The docs say so without a MUST (the "
    "answer's shape is the schema's, checked by schema.agent-messages).",
    source=CONFIG,
    level=Level.SHOULD,
    expected="consistent options; set_config_option answered with the new value",
    fix="Keep currentValue among the option's values, answer set_config_option with every "
    "option, and send boolean options only to clients that accept them.",
)
async def config_options(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    session_id, result = await _new_session_result(ctx, conn)
    options = result.get("configOptions")
    if not isinstance(options, list) or not options:
        return skipped("the agent advertises no config options")
    problems = _option_problems(options)
    if problems:
        return failed("inconsistent config options", problems)
    select = next((o for o in options if isinstance(o, dict) and o.get("type") == "select"), None)
    if select is None:
        return passed("no select option to set")
    values = _option_values(select)
    value = next((v for v in values if v != select.get("currentValue")), select.get("currentValue"))
    params = {"sessionId": session_id, "configId": select.get("id"), "value": value}
    reply = await conn.request("session/set_config_option", params, timeout=ctx.options.timeout)
    got = ctx.show(conn, reply)
    if reply.status != "result" or not isinstance(reply.result, dict):
        return failed(f"set_config_option got {reply.describe()}", got)
    after = reply.result.get("configOptions")
    changed = (
        [o for o in after if isinstance(o, dict) and o.get("id") == select.get("id")]
        if isinstance(after, list)
        else []
    )
    if not changed or changed[0].get("currentValue") != value:
        return failed(f"the answer does not show {select.get('id')!r} = {value!r}", got)
    return passed(f"{len(options)} option(s); set {select.get('id')!r} to {value!r}")


@case(
    "session.list",
    "session/list answers when advertised",
    group="sessions",
    rule="session/list with empty params returns the sessions (an empty list when none "
    "match); agents SHOULD refuse cursors they never issued (no MUST: findings are warnings; "
    "the answer's shape is checked by schema.agent-messages).",
    source=f"{SETUP}#listing-sessions",
    level=Level.SHOULD,
    expected="{sessions: [...]} for empty params; an error for an invented cursor",
    fix="Implement session/list as advertised, or stop advertising sessionCapabilities.list.",
)
async def session_list(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    if not _advertised(conn, "list"):
        return skipped("sessionCapabilities.list is not advertised")
    await ctx.new_session(conn)
    reply = await conn.request("session/list", {}, timeout=ctx.options.timeout)
    got = ctx.show(conn, reply)
    result = reply.result
    if reply.status != "result" or not isinstance(result, dict):
        return failed(f"session/list got {reply.describe()}", got)
    if not isinstance(result.get("sessions"), list):
        return failed("no sessions array in the result", got)
    bogus = await conn.request(
        "session/list", {"cursor": "acpstack-check-invented-cursor"}, timeout=ctx.options.timeout
    )
    got += ctx.show(conn, bogus)
    if bogus.status in ("timeout", "closed"):
        return failed(f"session/list with an invented cursor got {bogus.describe()}", got)
    if bogus.status == "result":
        return warned("accepted a cursor it never issued", got)
    return passed(f"{len(result['sessions'])} session(s) listed; invented cursor refused")


async def _reattach(
    ctx: Context, method: str, conn: Connection, session_id: str
) -> tuple[Reply, Connection, list[Frame]]:
    """`method` (session/load or session/resume) on a new connection, as an editor does
    after a restart; on the same connection if the new one cannot find the session."""
    params: dict[str, Any] = {"sessionId": session_id, "cwd": str(ctx.workspace(conn))}
    params["mcpServers"] = []
    fresh = await ctx.ready()
    for target in (fresh, conn):
        start = target.probe.last_seq
        reply = await target.request(method, params, timeout=ctx.options.timeout)
        if reply.status == "result" or target is conn:
            answered = reply.frame.seq if reply.frame is not None else target.probe.last_seq
            await target.probe.quiet(ctx.options.settle, limit=ctx.options.settle * 4)
            return reply, target, [f for f in target.probe.since(start) if f.seq != answered]
    raise AssertionError("unreachable")


@dataclass
class _Reattached:
    """A session with a turn behind it, reattached by session/load or session/resume."""

    session_id: str
    reply: Reply
    where: Connection  # the connection that answered
    frames: list[Frame]  # the rest the agent sent there, answer excluded
    scope: str  # where, in words


async def _reattach_after_turn(
    ctx: Context, method: str, capability: str, advertised_as: str
) -> _Reattached:
    """A new session with one turn, then `method` on it (see `_reattach`); skips the case
    when the agent does not advertise `capability` (named `advertised_as` in the skip)."""
    conn = await ctx.shared()
    if not _advertised(conn, capability):
        raise CaseSkip(f"{advertised_as} is not advertised")
    session_id = await ctx.new_session(conn)
    await ctx.turn(conn, session_id)
    reply, where, frames = await _reattach(ctx, method, conn, session_id)
    scope = "a new connection" if where is not conn else "the same connection only"
    return _Reattached(session_id, reply, where, frames, scope)


def _turn_updates(frames: list[Frame], session_id: str) -> list[Frame]:
    return [f for f in frames if f.session_id == session_id and f.update_kind in TURN_UPDATES]


@case(
    "session.load",
    "session/load replays the conversation before answering",
    group="sessions",
    rule="The Agent MUST replay the entire conversation to the Client in the form of "
    "session/update notifications; when all entries have been streamed, it MUST respond to "
    "the original session/load request.",
    source=f"{SETUP}#loading-sessions",
    level=Level.MUST,
    expected="session/update notifications for the session, then the answer; none after it",
    fix="Send the whole history as session/update notifications, then answer session/load.",
)
async def session_load(ctx: Context) -> Outcome:
    back = await _reattach_after_turn(ctx, "session/load", "load", "loadSession")
    reply, frames = back.reply, back.frames
    got = ctx.show(back.where, reply) + [f.show() for f in frames][:8]
    if reply.status != "result":
        return failed(f"session/load got {reply.describe()}", got)
    answered = reply.frame.seq if reply.frame is not None else 0
    replayed = [f for f in _turn_updates(frames, back.session_id) if f.seq < answered]
    late = [f for f in _turn_updates(frames, back.session_id) if f.seq > answered]
    if late:
        return failed("history updates arrived after the answer", [f.show() for f in late])
    if not replayed:
        return warned(
            f"loaded on {back.scope}, but replayed nothing of a conversation with a turn", got
        )
    return passed(f"loaded on {back.scope}; {len(replayed)} update(s) replayed before the answer")


@case(
    "session.resume",
    "session/resume answers without replaying the history",
    group="sessions",
    rule="session/resume resumes an existing session; the Agent MUST NOT replay the history.",
    source=f"{SETUP}#resuming-sessions",
    level=Level.MUST,
    expected="an answer with no replayed message or tool updates before it",
    fix="Answer session/resume without sending the conversation again (that is session/load).",
)
async def session_resume(ctx: Context) -> Outcome:
    back = await _reattach_after_turn(ctx, "session/resume", "resume", "sessionCapabilities.resume")
    got = ctx.show(back.where, back.reply)
    if back.reply.status != "result":
        return failed(f"session/resume got {back.reply.describe()}", got)
    replayed = _turn_updates(back.frames, back.session_id)
    if replayed:
        return failed("replayed history on resume", [f.show() for f in replayed][:8])
    return passed(f"resumed on {back.scope} without replay")


@case(
    "session.close",
    "session/close answers when advertised",
    group="sessions",
    rule="session/close cancels ongoing work as if session/cancel, frees the session's "
    "resources and answers {} (no MUST: an advertised method that fails is a warning).",
    source=f"{SETUP}#closing-sessions",
    level=Level.SHOULD,
    expected="a result for session/close on a live session",
    fix="Implement session/close as advertised, or stop advertising sessionCapabilities.close.",
)
async def session_close(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    if not _advertised(conn, "close"):
        return skipped("sessionCapabilities.close is not advertised")
    session_id = await ctx.new_session(conn)
    reply = await conn.request(
        "session/close", {"sessionId": session_id}, timeout=ctx.options.timeout
    )
    if reply.status != "result":
        return failed(f"session/close got {reply.describe()}", ctx.show(conn, reply))
    return passed("closed")


@case(
    "session.delete",
    "session/delete answers, and is idempotent",
    group="sessions",
    rule="session/delete is idempotent: deleting an unknown or already deleted session SHOULD "
    "succeed.",
    source=f"{SETUP}#deleting-sessions",
    level=Level.SHOULD,
    expected="a result for the first and for the repeated delete",
    fix="Answer {} for session/delete, also when the session is already gone.",
)
async def session_delete(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    if not _advertised(conn, "delete"):
        return skipped("sessionCapabilities.delete is not advertised")
    session_id = await ctx.new_session(conn)
    params = {"sessionId": session_id}
    first = await conn.request("session/delete", params, timeout=ctx.options.timeout)
    if first.status != "result":
        return failed(f"session/delete got {first.describe()}", ctx.show(conn, first))
    again = await conn.request("session/delete", params, timeout=ctx.options.timeout)
    if again.status == "error":
        return warned("deleting it again failed", ctx.show(conn, first, again))
    if again.status != "result":
        return failed(f"the repeated delete got {again.describe()}", ctx.show(conn, again))
    return passed("deleted; deleting again succeeded too")
