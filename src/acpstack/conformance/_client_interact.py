"""The interactive part of `acpstack check client`: permissions (with cancellation),
elicitation, and every stable session/update kind for the client to render."""

from __future__ import annotations

from typing import Any

from acpstack.conformance._client_exercises import Exercise
from acpstack.conformance._frames import Frame, obj
from acpstack.conformance._model import DOCS, Verdict

PERMISSION = f"{DOCS}/tool-calls#requesting-permission"
CANCEL = f"{DOCS}/prompt-turn#cancellation"
ELICITATION = f"{DOCS}/elicitation"
OPTIONS = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
]
OPTION_IDS = {o["optionId"] for o in OPTIONS}
#: How long a client has to answer session/request_permission once session/cancel came.
CANCEL_ANSWER_WAIT = 5.0


def _tool_call(ex: Exercise, call_id: str, title: str) -> dict[str, Any]:
    ex.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": title,
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": str(ex.cwd / "README.md"), "line": 1}],
        }
    )
    return {"toolCallId": call_id, "title": title, "kind": "edit", "status": "pending"}


async def permission(ex: Exercise, wait: float) -> None:
    call = _tool_call(ex, "check-permission", "acpstack check: a permission request (pick any)")
    reply = await ex.call(
        "session/request_permission", {"toolCall": call, "options": OPTIONS}, timeout=wait
    )
    rule = "The client answers with the user's choice: selected with one of the offered optionIds, or cancelled."
    outcome = obj(obj(reply.result).get("outcome"))
    if reply.status == "timeout":
        ex.note("permission.answer", Verdict.WARN, f"no answer within {wait:g} s", rule, PERMISSION)
    elif outcome.get("outcome") == "selected" and outcome.get("optionId") in OPTION_IDS:
        ex.note(
            "permission.answer", Verdict.PASS, f"selected {outcome['optionId']}", rule, PERMISSION
        )
    elif outcome.get("outcome") == "cancelled":
        ex.note("permission.answer", Verdict.PASS, "cancelled (dismissed)", rule, PERMISSION)
    else:
        ex.note(
            "permission.answer",
            Verdict.FAIL,
            f"answered {reply.describe()}: {outcome}",
            rule,
            PERMISSION,
        )
    status = "completed" if str(outcome.get("optionId", "")).startswith("allow") else "failed"
    ex.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": "check-permission", "status": status}
    )


async def permission_cancel(ex: Exercise, wait: float) -> str:
    """Ask for permission and wait for the user to cancel the turn meanwhile: the client
    must then answer the pending request `cancelled`. Returns the turn's stop reason."""
    rule = (
        "The Client MUST respond to all pending session/request_permission requests with the "
        "cancelled outcome when it cancels the turn."
    )
    ex.say("Now press your client's stop (cancel) button while the permission request is shown.\n")
    call = _tool_call(ex, "check-cancel", "acpstack check: press stop now (do not answer)")
    probe = ex.probe
    rid = probe.next_id()
    params = {"sessionId": ex.session_id, "toolCall": call, "options": OPTIONS}
    sent = probe.send(
        {"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": params}
    )

    def answer_or_cancel(frame: Frame) -> bool:
        mine = frame.is_response and frame.message.get("id") == rid
        return mine or (frame.method == "session/cancel" and frame.session_id == ex.session_id)

    first = await probe.wait_for(answer_or_cancel, wait, after=sent.seq)
    if first is None:
        ex.note("permission.cancel", Verdict.SKIP, f"no cancel within {wait:g} s", rule, CANCEL)
        return "end_turn"
    if first.is_response:
        ex.note(
            "permission.cancel",
            Verdict.SKIP,
            "the request was answered before the turn was cancelled; send `cancel` again and "
            "press stop while the request is shown",
            rule,
            CANCEL,
        )
        return "end_turn"
    reply = await probe.reply(rid, timeout=CANCEL_ANSWER_WAIT)
    outcome = obj(obj(reply.result).get("outcome")).get("outcome")
    if reply.status == "result" and outcome == "cancelled":
        ex.note(
            "permission.cancel",
            Verdict.PASS,
            "answered cancelled after session/cancel",
            rule,
            CANCEL,
        )
    elif reply.status == "timeout":
        message = f"the pending request was not answered within {CANCEL_ANSWER_WAIT:g} s of session/cancel"
        ex.note("permission.cancel", Verdict.FAIL, message, rule, CANCEL)
    else:
        message = f"answered {outcome or reply.describe()!r} after session/cancel"
        ex.note("permission.cancel", Verdict.FAIL, message, rule, CANCEL)
    ex.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": "check-cancel", "status": "failed"}
    )
    return "cancelled"


FORM_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name"},
        "count": {"type": "integer", "title": "A number from 1 to 5", "minimum": 1, "maximum": 5},
        "ok": {"type": "boolean", "title": "Everything fine?"},
    },
    "required": ["name"],
}


async def elicitation(ex: Exercise, wait: float) -> None:
    modes = obj(ex.capabilities.get("elicitation"))
    rule = "Elicitation is sent only in advertised modes; the answer is accept (with content for forms), decline or cancel."
    if modes.get("form") is None and modes.get("url") is None:
        ex.note(
            "elicitation",
            Verdict.SKIP,
            "the client does not advertise elicitation",
            rule,
            ELICITATION,
        )
        return
    if modes.get("form") is not None:
        params = {
            "mode": "form",
            "message": "acpstack check: fill in this form",
            "requestedSchema": FORM_SCHEMA,
        }
        reply = await ex.call("elicitation/create", params, timeout=wait)
        _grade_form(ex, reply.status, obj(reply.result), rule)
    if modes.get("url") is not None:
        params = {
            "mode": "url",
            "message": "acpstack check: a link (accepting only means you agree to open it)",
            "elicitationId": "acpstack-check-url",
            "url": "https://agentclientprotocol.com/protocol/elicitation",
        }
        reply = await ex.call("elicitation/create", params, timeout=wait)
        action = obj(reply.result).get("action")
        verdict = Verdict.PASS if action in ("accept", "decline", "cancel") else Verdict.FAIL
        ex.note(
            "elicitation.url", verdict, f"action {action!r} ({reply.describe()})", rule, ELICITATION
        )
        ex.probe.notify("elicitation/complete", {"elicitationId": "acpstack-check-url"})


def _grade_form(ex: Exercise, status: str, result: dict[str, Any], rule: str) -> None:
    action = result.get("action")
    content = obj(result.get("content"))
    if status != "result" or action not in ("accept", "decline", "cancel"):
        ex.note("elicitation.form", Verdict.FAIL, f"answered {status}: {result}", rule, ELICITATION)
        return
    problems = []
    if action == "accept":
        if not isinstance(content.get("name"), str):
            problems.append("name (required) is not a string")
        count = content.get("count")
        if count is not None and (type(count) is not int or not 1 <= count <= 5):
            problems.append(f"count {count!r} is not an integer from 1 to 5")
        if content.get("ok") is not None and not isinstance(content.get("ok"), bool):
            problems.append("ok is not a boolean")
    verdict = Verdict.FAIL if problems else Verdict.PASS
    ex.note(
        "elicitation.form", verdict, "; ".join(problems) or f"action {action}", rule, ELICITATION
    )


def every_update(ex: Exercise) -> None:
    """Every stable session/update kind once; the client must accept (and show) them all."""
    text = {
        "type": "text",
        "text": "**Markdown** with `code` and a [link](https://agentclientprotocol.com).",
    }
    readme = str(ex.cwd / "README.md")
    updates: list[dict[str, Any]] = [
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": "(a user message chunk)"},
        },
        {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "Thinking about the checks."},
        },
        {"sessionUpdate": "agent_message_chunk", "content": text, "messageId": "check-message"},
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "check-render",
            "title": "A tool call with a diff",
            "kind": "edit",
            "status": "in_progress",
            "locations": [{"path": readme, "line": 1}],
            "content": [
                {"type": "content", "content": {"type": "text", "text": "tool output"}},
                {"type": "diff", "path": readme, "oldText": "old line\n", "newText": "new line\n"},
            ],
            "rawInput": {"path": readme},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "check-render",
            "status": "completed",
            "rawOutput": {"ok": True},
        },
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "Files", "priority": "high", "status": "completed"},
                {"content": "Terminals", "priority": "medium", "status": "in_progress"},
                {"content": "Permissions", "priority": "low", "status": "pending"},
            ],
        },
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "cancel", "description": "check cancellation", "input": None},
                {
                    "name": "run",
                    "description": "run every check again",
                    "input": {"hint": "anything"},
                },
            ],
        },
        {"sessionUpdate": "current_mode_update", "currentModeId": "thorough"},
        {"sessionUpdate": "config_option_update", "configOptions": config_options("thorough")},
        {
            "sessionUpdate": "session_info_update",
            "title": "acpstack client check",
            "updatedAt": "2026-01-01T00:00:00Z",
        },
        {
            "sessionUpdate": "usage_update",
            "used": 1200,
            "size": 200000,
            "cost": {"amount": 0.01, "currency": "USD"},
        },
    ]
    for update in updates:
        ex.update(update)
    ex.note(
        "updates.render",
        Verdict.PASS,
        f"sent {len(updates)} update kinds; check that your client shows each one",
        "Clients render every stable session/update kind (and ignore none silently).",
        f"{DOCS}/prompt-turn#3-agent-reports-output",
    )


MODES = {
    "currentModeId": "quick",
    "availableModes": [{"id": "quick", "name": "Quick"}, {"id": "thorough", "name": "Thorough"}],
}


def config_options(current: str) -> list[dict[str, Any]]:
    values = [{"value": m["id"], "name": m["name"]} for m in MODES["availableModes"]]  # type: ignore[index]
    option = {"id": "mode", "name": "Mode", "category": "mode", "type": "select"}
    return [{**option, "currentValue": current, "options": values}]
