"""The model's side of a session: stored with the session, trimmed to the context window.

Every message the model sees (user turns, assistant messages, tool results) is appended to
the session's event log as an event of kind `llm_message`, one committed transaction per
step, so `session/load`, `session/resume` and `session/fork` (which copies the log) bring
it back and a killed agent loses at most the step in flight. The system prompt is not
stored: it is rebuilt for every request from the current configuration.

Trimming (`fit`) only shapes a request; nothing is ever removed from the store. Rule: keep
the system prompt, then walk back from the newest message keeping whole units (a user
message, an assistant answer, or an assistant message with tool calls together with all
its tool results) while the estimated tokens fit the budget; the newest user message is
always sent, even when older units had to go. Tokens are estimated at 4 characters each
(the JSON form of a message), an image at `IMAGE_TOKENS`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from acpstack.agent import Session

log = logging.getLogger("acpstack.llm")

LLM_EVENT = "llm_message"
IMAGE_TOKENS = 1000
MESSAGE_OVERHEAD = 4
INTERRUPTED = "error: this tool call did not finish (the turn was interrupted)"

Message = dict[str, Any]


class History:
    """The stored conversation of one session, cached on the live session object."""

    def __init__(self, session: Session, messages: list[Message]) -> None:
        self.session = session
        self.messages = messages

    @classmethod
    async def of(cls, session: Session) -> History:
        """The session's history: read from the store once per live session (off the event
        loop), then cached."""
        cached = session.state.get("llm_history")
        if isinstance(cached, History):
            return cached
        messages: list[Message] = []
        async for event in session.history():
            if event.kind != LLM_EVENT:
                continue
            try:
                message = json.loads(event.payload)
            except ValueError:
                log.warning(
                    "session %s: skipping an unreadable stored model message (seq %d)",
                    session.session_id,
                    event.seq,
                )
                continue
            if isinstance(message, dict) and isinstance(message.get("role"), str):
                messages.append(message)
        history = cls(session, messages)
        session.state["llm_history"] = history
        return history

    def append(self, message: Message) -> None:
        """Store the message (through the store's writer, in order with the session's
        updates), then keep it in memory."""
        payload = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        self.session.log_nowait(LLM_EVENT, payload)
        self.messages.append(message)


# -- shaping a request -----------------------------------------------------------------


def estimate_tokens(value: Any) -> int:
    """A rough token count of a message (or any JSON value): 4 characters a token."""
    images = 0

    def strip_images(node: Any) -> Any:
        nonlocal images
        if isinstance(node, dict):
            if node.get("type") == "image_url":
                images += 1
                return None
            return {k: strip_images(v) for k, v in node.items()}
        if isinstance(node, list):
            return [strip_images(v) for v in node]
        return node

    text = json.dumps(strip_images(value), ensure_ascii=False)
    return len(text) // 4 + images * IMAGE_TOKENS + MESSAGE_OVERHEAD


def units(messages: Sequence[Message]) -> list[list[Message]]:
    """Group messages into units that must stay together, repairing broken tool rounds.

    An assistant message with tool calls is followed by one result per call (a call left
    without a result by a cancelled or killed turn gets a stand-in result, which the API
    requires); a tool result without its call is dropped.
    """
    grouped: list[list[Message]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        role = message.get("role")
        if role == "tool":
            continue  # orphan: its assistant message is not in the history
        calls = (message.get("tool_calls") or []) if role == "assistant" else []
        if not calls:
            grouped.append([message])
            continue
        results: dict[str, Message] = {}
        while index < len(messages) and messages[index].get("role") == "tool":
            results.setdefault(str(messages[index].get("tool_call_id")), messages[index])
            index += 1
        unit = [message]
        for call in calls:
            call_id = str(call.get("id"))
            unit.append(
                results.get(call_id)
                or {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED}
            )
        grouped.append(unit)
    return grouped


def fit(system: Message, messages: Sequence[Message], budget: int) -> list[Message]:
    """The messages to send: the system prompt and the newest units that fit `budget` tokens."""
    groups = units(messages)
    last_user = max(
        (i for i, unit in enumerate(groups) if unit[0].get("role") == "user"), default=None
    )
    used = estimate_tokens(system)
    first_kept = len(groups)
    for i in range(len(groups) - 1, -1, -1):
        cost = sum(estimate_tokens(m) for m in groups[i])
        if used + cost > budget:
            break
        used += cost
        first_kept = i
    kept = groups[first_kept:]
    if last_user is not None and last_user < first_kept:
        kept.insert(0, groups[last_user])  # the task itself always goes to the model
    if first_kept > 0:
        log.info(
            "context window: sending %d of %d messages (older ones stay stored)",
            sum(map(len, kept)),
            len(messages),
        )
    return [system, *(m for unit in kept for m in unit)]


def request_budget(context_window: int, tools: Sequence[Any]) -> int:
    """Tokens left for messages: the window minus a reserve for the answer and the tool definitions."""
    reserve = min(4096, context_window // 4)
    return context_window - reserve - estimate_tokens(list(tools))
