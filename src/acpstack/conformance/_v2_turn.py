"""Steps of a protocol v2 conversation for the v2 cases: a connection that negotiated 2, a
turn (acknowledgement, then state updates until `idle`), and checking the agent's
messages against the v2 schema.

In v2 the answer to `session/prompt` only acknowledges the prompt; the turn ends with a
`state_update` whose state is `idle`. So a turn is watched until that idle (not until the
answer, as on v1), then a little longer for messages that should not come.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from acpstack.conformance._context import CLIENT_INFO, UNSUPPORTED, Context
from acpstack.conformance._frames import Frame, obj
from acpstack.conformance._model import CaseFail, CaseSkip
from acpstack.conformance._probe import Reply
from acpstack.conformance._schema import MessageValidator
from acpstack.conformance._target import Connection

NO_V2 = "the agent does not speak protocol v2"
#: Agent output that belongs to a turn's foreground work (must come before its idle).
TURN_CONTENT = frozenset(
    {
        "agent_message_chunk",
        "agent_message",
        "agent_thought_chunk",
        "agent_thought",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan_update",
    }
)


@functools.cache
def v2_validator(unstable: bool) -> MessageValidator:
    return MessageValidator(unstable=unstable, version=2)


def state_of(frame: Frame) -> str | None:
    """The `state` of a v2 `state_update` (None for any other frame)."""
    if frame.update_kind != "state_update":
        return None
    state = obj(obj(frame.params).get("update")).get("state")
    return state if isinstance(state, str) else None


def stop_reason_of(frame: Frame) -> Any:
    return obj(obj(frame.params).get("update")).get("stopReason")


@dataclass
class V2Turn:
    """One v2 `session/prompt`: its acknowledgement, and the agent's frames until the idle
    state update that ends the turn (`during`) and in the short watch after it (`late`)."""

    session_id: str
    request: Frame
    reply: Reply
    idle: Frame | None
    during: list[Frame]
    late: list[Frame]
    cancel: Frame | None = None

    @property
    def message_id(self) -> Any:
        return obj(self.reply.result).get("messageId")

    def frames(self) -> list[Frame]:
        """Every frame of the turn in order, the request first."""
        return [self.request, *self.during, *([self.idle] if self.idle else []), *self.late]

    def agent_frames(self) -> list[Frame]:
        return [f for f in self.frames() if f.direction == "in"]


async def v2_connection(ctx: Context, **open_args: Any) -> Connection:
    """A new connection on which `initialize` with protocolVersion 2 (in v2's shape) was
    answered with 2.

    Only an answer that says so means the agent does not speak v2: protocolVersion 1, or
    error -32022 (Unsupported protocol version). Then the case is skipped, and so are the
    later v2 cases (the answer is remembered). Anything else (no answer in time, the agent
    gone, another error, a version that does not exist) fails this case only: the next
    case tries again on a new connection."""
    if "no-v2" in ctx.memo:
        raise CaseSkip(ctx.memo["no-v2"])
    conn = await ctx.open(capabilities={}, validate=False, **open_args)
    params = {"protocolVersion": 2, "info": CLIENT_INFO, "capabilities": {}}
    reply = await conn.request("initialize", params, timeout=ctx.options.timeout)
    version = obj(reply.result).get("protocolVersion")
    if reply.status == "result" and version == 2 and type(version) is int:
        conn.initialize = reply.result
    elif (reply.status == "result" and version == 1 and type(version) is int) or (
        reply.status == "error" and reply.code == UNSUPPORTED
    ):
        answer = "protocolVersion 1" if reply.status == "result" else reply.describe()
        ctx.memo["no-v2"] = f"{NO_V2} (initialize with protocolVersion 2 got {answer})"
        raise CaseSkip(ctx.memo["no-v2"])
    else:
        answer = f"protocolVersion {version!r}" if reply.status == "result" else reply.describe()
        raise CaseFail(
            f"initialize with protocolVersion 2 got {answer}",
            ["-> initialize with protocolVersion 2, in v2's shape", *ctx.show(conn, reply)],
            expected="protocolVersion 2 (an agent that speaks v2), or 1 or error -32022 "
            "(one that does not: the v2 cases are then skipped)",
            timed_out=reply.status == "timeout",
        )
    if ctx.options.auth_method:
        login = {"methodId": ctx.options.auth_method}
        auth = await conn.request("auth/login", login, timeout=ctx.options.timeout)
        if auth.status != "result":
            raise CaseSkip(f"needs a v2 session, but auth/login got {auth.describe()}")
    return conn


async def v2_turn(
    ctx: Context, conn: Connection, session_id: str, prompt: str, *, cancel: bool = False
) -> V2Turn:
    """Send a prompt and watch the turn until its idle state update (at most the timeout
    after the acknowledgement), then `settle` seconds more. `cancel`: send `session/cancel`
    once the prompt is acknowledged (unless the turn is already idle)."""
    probe = conn.probe
    conn.client.turn_started(session_id)
    rid = probe.next_id()
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": prompt}]}
    request = probe.send(
        {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}
    )
    reply = await probe.reply(rid, timeout=ctx.options.timeout)

    def is_idle(frame: Frame) -> bool:
        return frame.session_id == session_id and state_of(frame) == "idle"

    cancel_frame = None
    if cancel and reply.status == "result" and not any(map(is_idle, probe.since(request.seq))):
        cancel_frame = probe.notify("session/cancel", {"sessionId": session_id})
    idle = None
    if reply.status == "result":
        idle = await probe.wait_for(is_idle, ctx.options.timeout, after=request.seq)
    if idle is not None:
        await probe.quiet(ctx.options.settle, limit=ctx.options.settle * 4)
    end = idle.seq if idle is not None else probe.last_seq + 1
    frames = probe.since(request.seq)
    during = [f for f in frames if f.seq < end]
    late = [f for f in frames if f.seq > end]
    return V2Turn(session_id, request, reply, idle, during, late, cancel_frame)


def schema_problems(
    ctx: Context, frames: list[Frame], answered: str = "session/prompt"
) -> list[str]:
    """Each place where one of the agent's `frames` breaks the v2 schema, with the frame.
    A response among them answers `answered` (a turn's frames hold only the prompt's)."""
    validator = v2_validator(ctx.options.unstable)
    found: list[str] = []
    for frame in frames:
        if frame.direction != "in" or not frame.is_object:
            continue
        method = answered if frame.is_response else None
        for violation in validator.validate(frame.message, sender="agent", answered_method=method):
            found.append(f"v2 {violation}")
            found.append(f"   in {frame.show(200)}")
    return found
