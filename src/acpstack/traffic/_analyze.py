"""Turns traffic records into events for people: requests paired with their responses and
latencies, the session each message belongs to, schema violations, and the text of the
conversation."""

from __future__ import annotations

import json
from typing import Any

from acpstack.conformance import MessageValidator, SchemaUnavailable
from acpstack.traffic._record import Record, obj

DETAIL_LIMIT = 20_000
TEXT_LIMIT = 4_000
_ROLES = {
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
    "user_message_chunk": "user",
}


def _text_of(block: Any) -> str:
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    if block.get("type") == "resource_link":
        return f"[{block.get('name') or block.get('uri')}]"
    if block.get("type") in ("image", "audio", "resource"):
        return f"[{block.get('type')}]"
    return ""


class TrafficAnalyzer:
    """Feed records in order with `add`; each returns the event to show.

    With `validate`, every message is checked against the official schema (`unstable`:
    the schema with the unstable methods); when the schema cannot be loaded, checks are
    off and `validation_note` says why.
    """

    def __init__(self, *, validate: bool = True, unstable: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        """Every event so far, in order (`seq` is its position, from 1)."""
        self.validation_note: str = ""
        """Why schema checks are off ("" when they are on, or not asked)."""
        self._validator: MessageValidator | None = None
        if validate:
            try:
                self._validator = MessageValidator(unstable=unstable)
            except SchemaUnavailable as exc:
                self.validation_note = f"schema checks are off: {exc}"
        # (side that sent the request, id) -> the request's event
        self._pending: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, record: Record) -> dict[str, Any]:
        """Turn `record` into an event and append it to `events`.

        An event is a JSON object: `seq`, `ts`, `from`, `kind` (request, notification,
        response, error, invalid or stderr), `summary`, `session` and `violations`
        (schema problems, answers to unknown ids); messages also carry `method`, `id`
        and `detail` (the JSON, shortened). A response and its request are paired: each
        gets the other's `seq` as `pair`, and `latency_ms`."""
        event: dict[str, Any] = {
            "seq": len(self.events) + 1,
            "ts": record.ts,
            "from": record.side,
            "session": None,
            "violations": [],
        }
        if record.stderr is not None:
            event.update(kind="stderr", summary=record.stderr[:TEXT_LIMIT])
        elif not record.is_message:
            event.update(
                kind="invalid", summary=record.problem, detail=(record.raw or "")[:DETAIL_LIMIT]
            )
            event["violations"].append(f"not a JSON-RPC message: {record.problem}")
        else:
            self._message(event, record)
        self.events.append(event)
        return event

    def _message(self, event: dict[str, Any], record: Record) -> None:
        message = record.message
        event["detail"] = json.dumps(message, indent=1, ensure_ascii=False)[:DETAIL_LIMIT]
        if not isinstance(message, dict):
            event.update(kind="invalid", summary="not a JSON object")
            event["violations"].append("a JSON-RPC message is a JSON object")
            return
        method = message.get("method")
        params = obj(message.get("params"))
        answered: str | None = None
        if isinstance(method, str):
            event.update(kind="request" if "id" in message else "notification", method=method)
            event["id"] = message.get("id")
            event["session"] = params.get("sessionId")
            event["summary"] = self._summary(method, params)
            if "id" in message:
                self._pending[(record.side, json.dumps(message.get("id")))] = event
            self._conversation(event, method, params)
        else:
            answered = self._response(event, record, message)
        if self._validator is not None:
            problems = self._validator.validate(
                message, sender=record.side, answered_method=answered
            )
            event["violations"] += [str(p) for p in problems]

    def _response(
        self, event: dict[str, Any], record: Record, message: dict[str, Any]
    ) -> str | None:
        asker = "agent" if record.side == "client" else "client"
        request = self._pending.pop((asker, json.dumps(message.get("id"))), None)
        error = message.get("error")
        event.update(kind="error" if error is not None else "response", id=message.get("id"))
        if request is None:
            event["violations"].append(
                "answers no pending request (unknown or already answered id)"
            )
            event["summary"] = "response to an unknown request"
            return None
        method = request.get("method")
        event.update(method=method, pair=request["seq"], session=request.get("session"))
        event["latency_ms"] = round((record.ts - request["ts"]) * 1000, 1)
        request["pair"] = event["seq"]
        request["latency_ms"] = event["latency_ms"]
        result = message.get("result")
        if isinstance(error, dict):
            event["summary"] = f"error {error.get('code')}: {str(error.get('message'))[:200]}"
        elif isinstance(result, dict):
            if method == "session/new" and isinstance(result.get("sessionId"), str):
                event["session"] = result["sessionId"]
            event["summary"] = self._result_summary(result)
        else:
            event["summary"] = "result"
        return str(method) if method is not None else None

    @staticmethod
    def _summary(method: str, params: dict[str, Any]) -> str:
        update = params.get("update")
        if method == "session/update" and isinstance(update, dict):
            kind = str(update.get("sessionUpdate"))
            title = update.get("title")
            return f"{kind}: {title}" if isinstance(title, str) else kind
        if method == "session/request_permission":
            call = obj(params.get("toolCall"))
            return f"permission: {call.get('title', '')}"
        return method

    @staticmethod
    def _result_summary(result: dict[str, Any]) -> str:
        if "stopReason" in result:
            return f"stopReason {result['stopReason']}"
        if "sessionId" in result:
            return f"session {result['sessionId']}"
        if "protocolVersion" in result:
            return f"protocolVersion {result['protocolVersion']}"
        return "result"

    @staticmethod
    def _conversation(event: dict[str, Any], method: str, params: dict[str, Any]) -> None:
        """The piece of conversation text this message carries, if any."""
        if method == "session/prompt" and isinstance(params.get("prompt"), list):
            text = "\n".join(t for t in map(_text_of, params["prompt"]) if t)
            event["conversation"] = {"role": "user", "text": text[:TEXT_LIMIT], "new": True}
            return
        update = params.get("update") if method == "session/update" else None
        if not isinstance(update, dict):
            return
        kind = update.get("sessionUpdate")
        if kind in _ROLES:
            text = _text_of(update.get("content"))
            if text:
                event["conversation"] = {"role": _ROLES[str(kind)], "text": text[:TEXT_LIMIT]}
        elif kind == "tool_call" and isinstance(update.get("title"), str):
            event["conversation"] = {
                "role": "tool",
                "text": update["title"][:TEXT_LIMIT],
                "new": True,
            }
