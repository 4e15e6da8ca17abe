"""Prompt turn cases: stop reasons, update scoping and order, content, cancellation."""

from __future__ import annotations

from acpstack.conformance._catalog import case
from acpstack.conformance._context import TURN_UPDATES, Context, Turn
from acpstack.conformance._frames import show_all
from acpstack.conformance._model import (
    DOCS,
    CaseFail,
    CaseSkip,
    Outcome,
    failed,
    passed,
    skipped,
)
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
    """Fail the case unless session/prompt got a result."""
    if turn.reply.status != "result":
        raise CaseFail(f"session/prompt got {turn.reply.describe()}", _turn_frames(turn))


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
    "updates during a turn belong to the prompt's session",
    group="prompt",
    rule="session/update notifications carry the sessionId of the session they pertain to.",
    source=f"{TURN}#3-agent-reports-output",
    expected="no session/update for another session while a prompt runs",
    fix="Send each session/update with the sessionId of the session whose turn produced it.",
)
async def updates_scoped(ctx: Context) -> Outcome:
    conn = await ctx.shared()
    other = await ctx.new_session(conn)
    session_id = await ctx.new_session(conn)
    turn = await ctx.turn(conn, session_id)
    _require_completed(turn)
    strangers = [f for f in turn.updates if f.session_id != session_id]
    if strangers:
        named = "the other session" if strangers[0].session_id == other else "another id"
        return failed(f"updates for {named} during the turn", show_all(strangers))
    return passed(f"{len(turn.updates)} update(s), all for the prompt's session")


@case(
    "prompt.no-late-updates",
    "no update of the turn after its answer",
    group="prompt",
    rule="All session/update notifications of a turn are sent before the session/prompt "
    "response: the response ends the turn.",
    source=f"{TURN}#4-check-for-completion",
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


@case(
    "cancel.session-cancel",
    'session/cancel ends the turn with stopReason "cancelled"',
    group="cancel",
    rule="After all ongoing operations have been aborted and pending updates sent, the Agent "
    "MUST respond to the original session/prompt request with the cancelled stop reason.",
    source=f"{TURN}#cancellation",
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
        return failed(f"after session/cancel the prompt got {turn.reply.describe()}", got)
    if _answered_before_cancel(turn):
        return skipped(
            "the turn ended before it could be cancelled; use --cancel-prompt with "
            "a prompt that takes longer"
        )
    if turn.reply.status == "error":
        return failed(f"a cancelled turn must not fail: {turn.reply.describe()}", got)
    if turn.stop_reason != "cancelled":
        return failed(f"stopReason {turn.stop_reason!r} after session/cancel ({LONGER})", got)
    late = [f for f in turn.late if f.update_kind in TURN_UPDATES]
    if late:
        return failed("updates of the cancelled turn came after its answer", show_all(late))
    return passed("cancelled")


@case(
    "cancel.permission",
    'a permission request answered "cancelled" ends the turn cancelled',
    group="cancel",
    rule="The Client MUST respond to all pending session/request_permission requests with the "
    "cancelled outcome; the Agent still ends the turn with the cancelled stop reason.",
    source=f"{TURN}#cancellation",
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
        return failed(f"{ignored}the prompt got {turn.reply.describe()}", got)
    if _answered_before_cancel(turn):
        return skipped("the turn ended before it could be cancelled; use --cancel-prompt")
    if turn.reply.status == "error" and turn.reply.code != -32800:
        return failed(f"{ignored}answered with {turn.reply.describe()} instead of -32800", got)
    how = "-32800" if turn.reply.status == "error" else f"a result ({turn.stop_reason})"
    if ignored:
        return passed(f"{ignored}answered after session/cancel with {how}")
    return passed(f"answered once with {how}")
