"""Protocol v2 conversation cases: a session, a turn reported by state updates, and a
cancelled turn, on a connection that negotiated 2. They run only when the agent answers
`initialize` with protocolVersion 2 (else they are skipped: the agent does not speak v2).

The rules: the v2 schema's `$defs` (PromptResponse, StateUpdate, IdleStateUpdate) and
the v2 prompt lifecycle docs. Every message of the agent is checked against the v2 schema.
"""

from __future__ import annotations

from typing import Any

from acpstack.conformance._catalog import case
from acpstack.conformance._context import Context
from acpstack.conformance._frames import Frame, obj, show_all
from acpstack.conformance._model import (
    DOCS,
    Level,
    Outcome,
    failed,
    missing_answer,
    passed,
    skipped,
    unanswered,
    warned,
)
from acpstack.conformance._target import Connection
from acpstack.conformance._v2_turn import (
    TURN_CONTENT,
    V2Turn,
    schema_problems,
    state_of,
    stop_reason_of,
    v2_connection,
    v2_turn,
)

LIFECYCLE = f"{DOCS}/v2/prompt-lifecycle"
SETUP = f"{DOCS}/v2/session-setup#creating-a-session"
TURN_FIX = (
    "Answer session/prompt at once with {messageId}; echo the prompt as a user_message "
    "update with that messageId; send state_update running, the turn's output, and "
    "state_update idle with the stopReason, all with the prompt's sessionId, and nothing "
    "of the turn after the idle."
)


async def _session(ctx: Context, **open_args: Any) -> tuple[Connection, str]:
    conn = await v2_connection(ctx, **open_args)
    return conn, await ctx.new_session(conn)


@case(
    "v2.session-new",
    "v2: session/new is answered with a session id",
    group="v2",
    rule="v2 schema: session/new is answered with NewSessionResponse, whose sessionId "
    "identifies the session in all later requests.",
    source=f"{SETUP}; schema v2 $defs/NewSessionResponse",
    level=Level.SCHEMA,
    expected="a result {sessionId, ...} valid against v2's NewSessionResponse",
    fix="Answer v2's session/new with {sessionId} (and optional configOptions, "
    "availableCommands) in v2's shape.",
)
async def session_new(ctx: Context) -> Outcome:
    conn = await v2_connection(ctx)
    reply = await ctx.new_session_reply(conn)
    got = ctx.show(conn, reply)
    if reply.status != "result":
        return failed(f"session/new got {reply.describe()}", got)
    problems = schema_problems(ctx, [reply.frame] if reply.frame else [], "session/new")
    if problems:
        return failed("session/new was answered, but not in v2's shape", problems + got)
    return passed(f"session {obj(reply.result).get('sessionId')}")


def _judge_turn(ctx: Context, turn: V2Turn) -> Outcome | None:
    """What is wrong with a v2 turn, cancelled or not (None: nothing)."""
    got = show_all(turn.frames(), limit=16)
    if turn.reply.status in ("timeout", "closed"):
        return missing_answer("session/prompt", turn.reply, got)
    if turn.reply.status != "result":
        return failed(f"session/prompt got {turn.reply.describe()}", got)
    problems = schema_problems(ctx, turn.agent_frames())
    if problems:
        return failed("messages of the turn break the v2 schema", problems[:12] + got)
    strangers = [f for f in turn.agent_frames() if f.session_id not in (None, turn.session_id)]
    if strangers:
        return failed("updates for another session during the turn", show_all(strangers))
    if turn.idle is None:
        return unanswered(
            f"no state_update idle within {ctx.options.timeout:g} s after the acknowledgement",
            got,
            "state_update running, the output, then state_update idle with a stopReason",
        )
    states = [state_of(f) for f in turn.during if state_of(f) is not None]
    if not states or states[0] not in ("running", "requires_action"):
        return failed(
            "the turn's first state_update was not running (or requires_action)",
            got,
            "state_update running when the work starts, before idle",
        )
    late = [f for f in turn.late if f.update_kind in TURN_CONTENT or state_of(f) is not None]
    if late:
        shown = [*show_all(late), "the whole turn:", *got]
        return failed(f"{len(late)} update(s) of the turn after its idle", shown)
    return None


@case(
    "v2.turn",
    "v2: a prompt is acknowledged, then reported running, its output, and idle",
    group="v2",
    rule="v2: session/prompt is answered with PromptResponse {messageId} (an "
    "acknowledgement) and the agent MUST echo the user's message with that messageId; it "
    "MUST report running when foreground work starts and idle when it ends, and SHOULD put "
    "the stop reason on that idle update.",
    source=f"{LIFECYCLE}; schema v2 $defs/PromptResponse (messageId), $defs/UserMessage, "
    "$defs/StateUpdate, $defs/IdleStateUpdate",
    level=Level.MUST,
    expected="{messageId}, the prompt echoed as user_message with that messageId, "
    "state_update running, the output, state_update idle with a stopReason; every message "
    "valid v2, all for the prompt's session, nothing after idle",
    fix=TURN_FIX,
)
async def turn(ctx: Context) -> Outcome:
    conn, session_id = await _session(ctx)
    found = await v2_turn(ctx, conn, session_id, ctx.options.prompt)
    wrong = _judge_turn(ctx, found)
    if wrong is not None:
        return wrong
    assert found.idle is not None
    got = show_all(found.frames(), limit=16)
    stop = stop_reason_of(found.idle)
    if stop is None:
        return warned(
            "the idle state_update that ended the turn carries no stopReason",
            got,
            "state_update idle with stopReason (end_turn, cancelled, error, ...)",
        )
    if not any(_echoes(frame, found.message_id) for frame in found.during):
        return failed(
            f"no user_message update with the acknowledged messageId {found.message_id!r}",
            got,
            "session/update user_message {messageId: <the acknowledgement's>, content: "
            "<the prompt>} during the turn (before or after the acknowledgement)",
        )
    output = [f for f in found.during if f.update_kind in TURN_CONTENT]
    if not output:
        return warned(f"the turn ended {stop} without any output", got)
    return passed(f"{stop} after {len(output)} output update(s), the prompt echoed")


def _echoes(frame: Frame, message_id: Any) -> bool:
    """Whether `frame` is the echo of the user's message the acknowledgement named."""
    if frame.update_kind not in ("user_message", "user_message_chunk"):
        return False
    echoed: Any = obj(obj(frame.params).get("update")).get("messageId")
    return bool(echoed == message_id)


@case(
    "v2.cancel",
    'v2: session/cancel ends the turn with idle, stopReason "cancelled"',
    group="v2",
    rule="v2: the agent MUST report idle when the turn's foreground work ends (after "
    'session/cancel too), and SHOULD put the stop reason, here "cancelled", on it.',
    source=f"{LIFECYCLE}#cancellation; schema v2 $defs/CancelSessionNotification, "
    "$defs/IdleStateUpdate",
    level=Level.MUST,
    expected='state_update idle {stopReason: "cancelled"}, with nothing of the turn after it',
    fix="On session/cancel stop the model and tools, answer pending requests, send what is "
    'left, then report state_update idle with stopReason "cancelled" (never "error").',
)
async def cancel(ctx: Context) -> Outcome:
    conn, session_id = await _session(ctx, permission="hold")
    found = await v2_turn(ctx, conn, session_id, ctx.options.cancel_prompt, cancel=True)
    if found.reply.status == "result" and found.cancel is None:
        return skipped(
            "the turn was idle before it could be cancelled; use --cancel-prompt with a "
            "prompt that takes longer"
        )
    wrong = _judge_turn(ctx, found)
    if wrong is not None:
        return wrong
    assert found.idle is not None
    stop = stop_reason_of(found.idle)
    if stop != "cancelled":
        return warned(
            f"the turn ended with stopReason {stop!r} after session/cancel (the stop "
            "reason is a SHOULD in v2)",
            show_all(found.frames(), limit=16),
        )
    return passed("cancelled")
