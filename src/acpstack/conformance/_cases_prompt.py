"""Prompt turn cases: stop reasons, update scoping and order, content, cancellation."""

from __future__ import annotations

from acpstack.conformance._catalog import case
from acpstack.conformance._context import TURN_UPDATES, Context, Turn
from acpstack.conformance._frames import obj, show_all
from acpstack.conformance._model import (
    DOCS,
    CaseFail,
    CaseSkip,
    Level,
    Outcome,
    failed,
    missing_answer,
    passed,
    skipped,
    warned,
)
from acpstack.conformance._probe import id_key
from acpstack.conformance._target import Connection

TURN = f"{DOCS}/prompt-turn"
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
CANCEL_FIX = (
    "On session/cancel stop the model and tools, answer pending requests, send what is "
    'left, then answer the session/prompt with stopReason "cancelled" (never an error).'
)
LONGER = "if the turn really had ended, give a slower prompt with --cancel-prompt"
#: How long a turn may go on after $/cancel_request before the checker ends it with
#: session/cancel (an agent may ignore $/cancel_request).
IGNORED_CANCEL_WAIT = 3.0


async def _basic_turn(ctx: Context) -> tuple[Connection, Turn]:
    """One ordinary turn on the group's connection, shared by the prompt cases."""
    cached = ctx.memo.get("basic-turn")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    conn = await ctx.shared()
    session_id = await ctx.new_session(conn)
    turn = await ctx.turn(conn, session_id)
    ctx.memo["basic-turn"] = (conn, turn)
    return conn, turn


def _turn_frames(turn: Turn) -> list[str]:
    return show_all(turn.frames())


def _require_answer(turn: Turn) -> None:
    """Fail the case unless session/prompt got a result (a warning when it got no answer
    in time: a slow agent is not a broken one)."""
    if turn.reply.status != "result":
        raise CaseFail(
            f"session/prompt got {turn.reply.describe()}",
            _turn_frames(turn),
            timed_out=turn.reply.status == "timeout",
        )


def _require_completed(turn: Turn) -> None:
    """Skip the case unless the turn got a result: the case looks at what a completed
    turn did (a turn that fails is prompt.stop-reason's finding)."""
    if turn.reply.status != "result":
        raise CaseSkip(f"the turn did not complete ({turn.reply.describe()})")


@case(
    "prompt.stop-reason",
    "a prompt turn ends with a valid stop reason",
    group="prompt",
    rule="When the turn ends, the Agent MUST respond to the original session/prompt request "
    "with a StopReason.",
    source=f"{TURN}#stop-reasons",
    level=Level.MUST,
    expected="a result {stopReason: end_turn | max_tokens | max_turn_requests | refusal | "
    "cancelled}",
    fix="Answer session/prompt with one of the five stop reasons; report failures of tools "
    "in the tool call, and errors of the turn as a JSON-RPC error.",
)
async def stop_reason(ctx: Context) -> Outcome:
    conn, turn = await _basic_turn(ctx)
    _require_answer(turn)
    if turn.stop_reason not in STOP_REASONS:
        return failed(f"stopReason {turn.stop_reason!r} is not a stop reason", _turn_frames(turn))
    return passed(f"{turn.stop_reason} after {len(turn.updates)} update(s)")


@case(
    "prompt.updates-scoped",
    "updates during a turn belong to a session the agent created",
    group="prompt",
    rule="SessionNotification.sessionId is the ID of the session this update pertains to: "
    "an id the agent never handed out pertains to no session. Updates for another session "
    "of the agent are correct (e.g. its commands); turn output for an idle one is suspect.",
    source="schema $defs/SessionNotification",
    level=Level.SCHEMA,
    expected="every session/update during the turn names a session the agent created; "
    "message, thought, tool call and plan updates name the prompt's session",
    fix="Send each session/update with the sessionId of the session it belongs to.",
)
async def updates_scoped(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    other = await ctx.new_session(conn)
    session_id = await ctx.new_session(conn)
    turn = await ctx.turn(conn, session_id)
    _require_completed(turn)
    known = _created_sessions(conn)
    strangers = [f for f in turn.updates if f.session_id != session_id]
    unknown = [f for f in strangers if f.session_id not in known]
    if unknown:
        return failed("updates for a session id the agent never created", show_all(unknown))
    output = [f for f in strangers if f.update_kind in TURN_UPDATES]
    if output:
        named = "the other, idle session" if output[0].session_id == other else "another session"
        return warned(f"turn output for {named} during the turn", show_all(output))
    if strangers:
        return passed(
            f"{len(turn.updates)} update(s); {len(strangers)} for another session of the agent "
            f"({', '.join(sorted({str(f.update_kind) for f in strangers}))}), which is correct"
        )
    return passed(f"{len(turn.updates)} update(s), all for the prompt's session")


def _created_sessions(conn: Connection) -> set[str]:
    """The session ids the agent handed out on `conn` (in any result)."""
    found = set()
    for frame in conn.probe.frames:
        if frame.direction == "in" and frame.is_response:
            session_id = obj(frame.message.get("result")).get("sessionId")
            if isinstance(session_id, str):
                found.add(session_id)
    return found


@case(
    "prompt.no-late-updates",
    "no update of the turn after its answer",
    group="prompt",
    rule="When the turn is over, the Agent MUST respond to the original session/prompt "
    "request with a StopReason: the response ends the turn, so its updates come first.",
    source=f"{TURN}#4-check-for-completion",
    level=Level.MUST,
    expected="no message, thought, tool call or plan update after the answer",
    fix="Send (and flush) every update of the turn before answering session/prompt.",
)
async def no_late_updates(ctx: Context) -> Outcome:
    conn, turn = await _basic_turn(ctx)
    _require_completed(turn)
    late = [f for f in turn.late if f.update_kind in TURN_UPDATES]
    if late:
        return failed(f"{len(late)} update(s) after the answer", show_all(late))
    return passed(f"nothing after the answer (watched {ctx.options.settle:g} s)")


@case(
    "prompt.resource-link",
    "a prompt with a resource_link block is accepted",
    group="prompt",
    rule="As a baseline, all Agents MUST support ContentBlock::Text and "
    "ContentBlock::ResourceLink in session/prompt requests.",
    source=f"{DOCS}/content#resource-link",
    level=Level.MUST,
    expected="a normal answer (any stop reason)",
    fix="Accept resource_link blocks in prompts (at least as a mention of the file).",
)
async def resource_link(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    session_id = await ctx.new_session(conn)
    readme = ctx.workspace(conn) / "README.md"
    prompt = [
        {"type": "text", "text": "What is in this file? One sentence, please."},
        {"type": "resource_link", "uri": readme.as_uri(), "name": "README.md"},
    ]
    turn = await ctx.turn(conn, session_id, prompt)
    _require_answer(turn)
    return passed(f"{turn.stop_reason}")


def _answered_before_cancel(turn: Turn) -> bool:
    reply = turn.reply.frame
    return turn.cancel is None or (reply is not None and reply.seq < turn.cancel.seq)


def running_at_cancel(conn: Connection, turn: Turn) -> str:
    """How the checker knows the turn was still running when `session/cancel` went out
    ("" when it cannot tell: a fast turn may have ended while the cancel was on its way)."""
    assert turn.cancel is not None
    before = turn.cancel.seq
    answered_early = {
        id_key(f.message.get("id"))
        for f in conn.probe.frames
        if f.direction == "out" and f.is_response and f.seq < before
    }
    for frame in turn.during:
        if frame.is_request and frame.seq < before:
            if id_key(frame.message.get("id")) not in answered_early:
                return f"its {frame.method} request was waiting for the client's answer"
    if turn.marker is not None and turn.reply.frame is not None:
        key = id_key(turn.marker.message.get("id"))
        marks = [f for f in turn.during if f.is_response and id_key(f.message.get("id")) == key]
        if marks:
            return "it answered a request sent after the cancel before it answered the prompt"
    return ""


@case(
    "cancel.session-cancel",
    'session/cancel ends the turn with stopReason "cancelled"',
    group="cancel",
    rule="After all ongoing operations have been aborted and pending updates sent, the Agent "
    "MUST respond to the original session/prompt request with the cancelled stop reason. "
    "This binds only a turn still running when the cancel arrives: the checker fails a "
    "turn only when it can show that (a request of the agent's still waiting for its "
    "answer, or a later request answered first), and warns otherwise.",
    source=f"{TURN}#cancellation",
    level=Level.MUST,
    expected='{stopReason: "cancelled"}, with no update of the turn after it',
    fix=CANCEL_FIX,
)
async def session_cancel(ctx: Context) -> Outcome:
    conn = await ctx.ready(permission="hold")
    session_id = await ctx.new_session(conn)
    turn = await ctx.turn(conn, session_id, ctx.options.cancel_prompt, cancel="session")
    ctx.memo["cancel-turn"] = (conn, turn)
    got = _turn_frames(turn)
    if turn.reply.status in ("timeout", "closed"):
        return missing_answer("after session/cancel the prompt", turn.reply, got)
    if _answered_before_cancel(turn):
        return skipped(
            "the turn ended before it could be cancelled; use --cancel-prompt with "
            "a prompt that takes longer"
        )
    running = running_at_cancel(conn, turn)
    if turn.stop_reason == "cancelled":
        late = [f for f in turn.late if f.update_kind in TURN_UPDATES]
        if late:
            return failed("updates of the cancelled turn came after its answer", show_all(late))
        return passed("cancelled")
    if turn.reply.status == "error":
        wrong = f"a cancelled turn must not fail: {turn.reply.describe()}"
    else:
        wrong = f"stopReason {turn.stop_reason!r} after session/cancel"
    if running:
        return failed(f"{wrong}, and the turn was still running ({running})", got)
    return warned(
        f"{wrong}; the checker cannot show the turn was still running when the cancel "
        f"arrived (a fast turn may end first): {LONGER}",
        got,
    )


@case(
    "cancel.permission",
    'a permission request answered "cancelled" ends the turn cancelled',
    group="cancel",
    rule="The Client MUST respond to all pending session/request_permission requests with the "
    "cancelled outcome; the Agent still ends the turn with the cancelled stop reason.",
    source=f"{TURN}#cancellation",
    level=Level.MUST,
    expected='stopReason "cancelled" after the permission request was answered cancelled',
    fix="Treat a cancelled permission outcome as the end of the tool call (never as approval) "
    'and answer the prompt with "cancelled".',
)
async def permission_cancelled(ctx: Context) -> Outcome:
    cached = ctx.memo.get("cancel-turn")
    if cached is None:
        return skipped("needs the turn of cancel.session-cancel")
    conn, turn = cached
    asked = [f for f in turn.during if f.method == "session/request_permission"]
    if not asked:
        return skipped("the agent asked for no permission during the cancelled turn")
    if turn.reply.status in ("timeout", "closed"):
        return missing_answer("after session/cancel the prompt", turn.reply, _turn_frames(turn))
    if turn.stop_reason != "cancelled":
        return failed(f"stopReason {turn.stop_reason!r}", _turn_frames(turn))
    return passed("the turn ended cancelled")


@case(
    "cancel.cancel-request",
    "$/cancel_request on a running prompt: still exactly one answer (-32800 if honoured)",
    group="cancel",
    rule="Receivers MAY ignore $/cancel_request, but the original request MUST still get a "
    "response: a normal (partial) result, or error -32800 (Request cancelled).",
    source=f"{DOCS}/cancellation",
    level=Level.MUST,
    expected="the prompt's answer: a result, or error -32800",
    fix="When you honour $/cancel_request, answer the request with error -32800; otherwise "
    "finish it normally. Never leave it unanswered.",
)
async def cancel_request(ctx: Context) -> Outcome:
    conn = await ctx.ready()
    conn.probe.notify("$/cancel_request", {"requestId": "acpstack-check-never-sent"})
    session_id = await ctx.new_session(conn)
    wait = min(ctx.options.timeout, IGNORED_CANCEL_WAIT)
    turn = await ctx.turn(conn, session_id, ctx.options.cancel_prompt, cancel="request", wait=wait)
    ignored = ""
    if turn.reply.status == "timeout" and turn.cancel is not None:
        # Ignoring $/cancel_request is allowed: then the turn goes on, so end it the usual way.
        conn.probe.notify("session/cancel", {"sessionId": session_id})
        turn.reply = await conn.probe.reply(turn.request.message["id"], timeout=ctx.options.timeout)
        ignored = f"no answer {wait:g} s after $/cancel_request (ignored, which is allowed); "
    got = _turn_frames(turn)
    if turn.reply.status in ("timeout", "closed"):
        return missing_answer(f"{ignored}the prompt", turn.reply, got)
    if _answered_before_cancel(turn):
        return skipped("the turn ended before it could be cancelled; use --cancel-prompt")
    if turn.reply.status == "error" and turn.reply.code != -32800:
        return failed(f"{ignored}answered with {turn.reply.describe()} instead of -32800", got)
    how = "-32800" if turn.reply.status == "error" else f"a result ({turn.stop_reason})"
    if ignored:
        return passed(f"{ignored}answered after session/cancel with {how}")
    return passed(f"answered once with {how}")
