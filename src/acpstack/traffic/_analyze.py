"""Turns traffic records into events for people: requests paired with their responses and
latencies, the session each message belongs to, schema violations, and the text of the
conversation.

A recording is one connection, and the connection speaks the protocol version negotiated
in its `initialize` exchange: the client's request is checked against the schema of the
version it asks for, everything from the agent's answer on against the schema of the
version answered (1 until then). The conversation is rebuilt from both versions' updates:
v1's message chunks and `tool_call`, v2's whole messages (`user_message`, `agent_message`,
`agent_thought`, which replace an earlier one with the same `messageId`) and tool calls
known only from `tool_call_update` with a title.
"""

from __future__ import annotations

import json
from typing import Any

from acpstack.conformance import MessageValidator, SchemaUnavailable
from acpstack.rpc import trace_ids
from acpstack.traffic._record import Record, obj

DETAIL_LIMIT = 20_000
TEXT_LIMIT = 4_000
_ROLES = {
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
    "user_message_chunk": "user",
}
#: v2's whole-message updates: complete (replacement) content of the message `messageId`.
_WHOLE = {"agent_message": "agent", "agent_thought": "thought", "user_message": "user"}
#: The protocol versions with a schema (the analyzer follows the one negotiated).
VERSIONS = (1, 2)


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


def _texts(blocks: Any) -> str:
    """The text of a list of content blocks (a prompt, a whole message)."""
    if not isinstance(blocks, list):
        return ""
    return "\n".join(t for t in map(_text_of, blocks) if t)


def _version(value: Any) -> int | None:
    """`value` when it is a protocol version with a schema here, else None."""
    return value if type(value) is int and value in VERSIONS else None


class TrafficAnalyzer:
    """Feed records in order with `add`; each returns the event to show.

    One analyzer follows one connection. With `validate`, every message is checked against
    the official schema of the protocol version the connection negotiated (`unstable`: the
    schema with the unstable methods); when the schema cannot be loaded, checks are off and
    `validation_note` says why.
    """

    def __init__(self, *, validate: bool = True, unstable: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        """Every event so far, in order (`seq` is its position, from 1)."""
        self.validation_note: str = ""
        """Why schema checks are off ("" when they are on, or not asked)."""
        self.protocol_version: int = 1
        """The version the agent answered `initialize` with (1 until it did)."""
        self._unstable = unstable
        self._validators: dict[int, MessageValidator] | None = None
        if validate:
            self._validators = {}
            self._validator(1)
        # (side that sent the request, id) -> the request's event
        self._pending: dict[tuple[str, str], dict[str, Any]] = {}
        # session -> the text of its last prompt, until a v2 agent echoes it (user_message)
        self._unechoed: dict[str, str] = {}
        self._last_update: dict[str, Any] = {}  # per session: the kind of its last update
        # session -> how many turns and replays it had (message keys are per turn)
        self._turns: dict[str, int] = {}

    def _validator(self, version: int) -> MessageValidator | None:
        """The validator of `version`'s schema (None: checks are off)."""
        if self._validators is None:
            return None
        found = self._validators.get(version)
        if found is None:
            try:
                found = MessageValidator(unstable=self._unstable, version=version)
            except SchemaUnavailable as exc:
                self.validation_note = f"schema checks are off: {exc}"
                self._validators = None
                return None
            self._validators[version] = found
        return found

    def add(self, record: Record) -> dict[str, Any]:
        """Turn `record` into an event and append it to `events`.

        An event is a JSON object: `seq`, `ts`, `from`, `kind` (request, notification,
        response, error, invalid or stderr), `summary`, `session` and `violations`
        (schema problems, answers to unknown ids); messages also carry `method`, `id`
        and `detail` (the JSON, shortened), and `traceId` and `spanId` when their `_meta`
        carries a W3C `traceparent`. A response and its request are paired: each
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
        event.update(trace_ids(message) or {})
        method = message.get("method")
        params = obj(message.get("params"))
        answered: str | None = None
        version = self.protocol_version
        if isinstance(method, str):
            event.update(kind="request" if "id" in message else "notification", method=method)
            event["id"] = message.get("id")
            event["session"] = params.get("sessionId")
            event["summary"] = self._summary(method, params)
            if "id" in message:
                self._pending[(record.side, json.dumps(message.get("id")))] = event
            if method == "initialize" and record.side == "client":
                # the client's params take the shape of the version it asks for
                asked = params.get("protocolVersion")
                version = 2 if type(asked) is int and asked >= 2 else 1
            self._conversation(event, method, params)
        else:
            answered = self._response(event, record, message)
            if answered == "initialize" and record.side == "agent":
                answer = _version(obj(message.get("result")).get("protocolVersion"))
                self.protocol_version = version = answer or self.protocol_version
        validator = self._validator(version)
        if validator is not None:
            problems = validator.validate(message, sender=record.side, answered_method=answered)
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
            if kind == "state_update":  # v2
                stop = update.get("stopReason")
                return f"state {update.get('state')}" + (f" ({stop})" if stop else "")
            title = update.get("title")
            return f"{kind}: {title}" if isinstance(title, str) else kind
        if method == "session/request_permission":
            title = params.get("title")  # v2; v1 names the tool call
            if not isinstance(title, str):
                title = obj(params.get("toolCall")).get("title", "")
            return f"permission: {title}"
        return method

    @staticmethod
    def _result_summary(result: dict[str, Any]) -> str:
        if "stopReason" in result:
            return f"stopReason {result['stopReason']}"
        if "sessionId" in result:
            return f"session {result['sessionId']}"
        if "protocolVersion" in result:
            return f"protocolVersion {result['protocolVersion']}"
        if "messageId" in result:  # v2's acknowledgement of a prompt
            return f"prompt accepted (message {result['messageId']})"
        return "result"

    def _conversation(self, event: dict[str, Any], method: str, params: dict[str, Any]) -> None:
        """The piece of conversation text this message carries, if any: `role`, `text`,
        `new` (starts an entry of its own), `message` (a key of the message or tool call it
        belongs to, within one turn or replay) and `replace` (replaces the text of that
        message's entry, if shown)."""
        session = str(params.get("sessionId"))
        if method in ("session/prompt", "session/load", "session/resume"):
            # a turn or a replay of the history: message keys start afresh
            self._turns[session] = self._turns.get(session, 0) + 1
            self._last_update.pop(session, None)
        if method == "session/prompt" and isinstance(params.get("prompt"), list):
            text = _texts(params["prompt"])
            self._unechoed[session] = text
            event["conversation"] = {"role": "user", "text": text[:TEXT_LIMIT], "new": True}
            return
        update = params.get("update") if method == "session/update" else None
        if not isinstance(update, dict):
            return
        kind = update.get("sessionUpdate")
        message = update.get("messageId")
        entry: dict[str, Any] | None = None
        previous, self._last_update[session] = self._last_update.get(session), kind
        if kind in _ROLES:
            text = _text_of(update.get("content"))
            if text:
                entry = {"role": _ROLES[str(kind)], "text": text}
                if message is None and previous != kind:
                    # v1 has no message ids: text after anything else (a plan, a tool
                    # call) is a message of its own, not more of the one before
                    entry["new"] = True
        elif kind in _WHOLE and isinstance(update.get("content"), list):
            text = _texts(update["content"])
            if kind == "user_message" and self._unechoed.get(session) == text:
                del self._unechoed[session]  # v2 echoes the prompt: shown already
                return
            entry = {"role": _WHOLE[str(kind)], "text": text, "new": True, "replace": True}
        elif kind in ("tool_call", "tool_call_update") and isinstance(update.get("title"), str):
            # v1 announces a tool call with tool_call; v2 only has tool_call_update, and a
            # title in a later update renames the call
            message = f"tool:{update.get('toolCallId')}"
            entry = {"role": "tool", "text": update["title"], "new": True, "replace": True}
        if entry is not None:
            entry["text"] = entry["text"][:TEXT_LIMIT]
            if isinstance(message, str):
                entry["message"] = f"{self._turns.get(session, 0)}/{message}"
            event["conversation"] = entry
