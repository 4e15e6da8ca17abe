"""A `SessionAgent` session on a protocol version 2 connection.

The same store and the same history as a v1 session (the version-neutral events of
`acpstack.events`); what differs is the wire: every update is encoded by the v2 codec
(`acpstack.events.v2`), the foreground state (`state_update`: running, requires_action while the user is
asked, idle with the stop reason) is reported, the user's message is echoed, and a
permission request carries a title and a subject. State reports and echoes are live
events: they are not recorded (a replay sends the recorded prompt as message chunks).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import msgspec

import acpstack.events as events
from acpstack.agent._cancel import CancelRegistry
from acpstack.agent._session import (
    SAME_EVERYWHERE,
    STORED_CHUNKS,
    Session,
    permission_answer,
)
from acpstack.events import MessageIds
from acpstack.events import v1 as events_v1
from acpstack.events import v2 as events_v2
from acpstack.rpc import ConnectionClosed
from acpstack.schema import v1 as acp
from acpstack.schema import v2

_encode = msgspec.json.Encoder().encode
_OWN_ID = re.compile(rb',"messageId":"[^"\\]*"\}\Z')


def _live_ids() -> MessageIds:
    return MessageIds(f"m{uuid.uuid4().hex[:12]}-")


@dataclass(slots=True)
class V2Session(Session):
    ids: MessageIds = field(default_factory=_live_ids)
    sent_as_stored: ClassVar[bool] = False  # every update through `wire_form`

    def __post_init__(self) -> None:
        self.cancels = CancelRegistry(self.send_live)  # v2: tool_call/ and terminal/cancel

    def wire_form(self, payload: bytes, update: Any = None) -> bytes | None:
        """A stored update in v2's shape (None: v2 has no such update)."""
        if type(update) in SAME_EVERYWHERE and isinstance(update.message_id, str):
            # A message chunk with its own id (every chunk `Turn` sends) has the same JSON
            # in both versions: sent as stored, without a second conversion.
            self.ids.message("", "own")  # as the mapping does for a chunk with an id
            return payload
        if update is None and payload.startswith(STORED_CHUNKS) and _OWN_ID.search(payload):
            self.ids.message("", "own")  # the same, for a stored one (replay)
            return payload
        event: events.Event
        if update is None:
            event = events.decode_event(payload)
        elif isinstance(update, events.EventStruct | events.UnknownEvent):
            event = cast("events.Event", update)
        else:  # a v1 update (its JSON is an event's)
            event = events_v1.decode(update)
        # The session's terminals are the client's (v1's `terminal/create`): not in v2.
        return events_v2.encode(event, self.ids, client_terminals=True)

    async def send_live(self, update: Any) -> None:
        """Send a v2 update (a struct or its JSON object) without recording it, after the
        updates sent before it."""
        await self.drain()
        await self.client.session_update_encoded(self.session_id, _encode(update))

    async def send_state(
        self, state: str, *, stop_reason: str | None = None, error: Any = None
    ) -> None:
        """Report the foreground state (`running`, `requires_action`, `idle`)."""
        update: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
        if stop_reason is not None:
            update["stopReason"] = stop_reason
        if error is not None:
            update["error"] = error
        await self.send_live(update)

    async def ask_permission(
        self, tool_call: acp.ToolCallUpdate, options: list[acp.PermissionOption]
    ) -> Any:
        """v2 `session/request_permission`: titled, about the tool call, reported as
        `requires_action` while the user decides; the outcome in the runtime's model."""
        call = events_v2.tool_call_to_v2(msgspec.to_builtins(tool_call), client_terminals=True)
        call.pop("sessionUpdate", None)
        title = tool_call.title if isinstance(tool_call.title, str) else "Allow this tool call?"
        params = msgspec.convert(
            {
                "sessionId": self.session_id,
                "title": title,
                "subject": {"type": "tool_call", "toolCall": call},
                "options": msgspec.to_builtins(options),
            },
            v2.RequestPermissionRequest,
        )
        await self.flush()  # the client has every update before it is asked
        await self.send_state("requires_action")
        request = self.client.connection.request("session/request_permission", params)
        answer = await permission_answer(self.session_id, request)
        if not self.cancel_requested:  # a cancelled turn goes idle instead
            with contextlib.suppress(ConnectionClosed):
                await self.send_state("running")
        if answer is None:
            return None  # the client has no permission handler: a refusal
        outcome = answer.outcome
        if isinstance(outcome, v2.SelectedPermissionOutcome):
            return acp.SelectedPermissionOutcome(option_id=outcome.option_id)
        if isinstance(outcome, v2.CancelledPermissionOutcome):
            return acp.CancelledRequestPermissionOutcome()
        return outcome  # unknown: never approval

    async def replay(self) -> int:
        """Send the recorded history in v2's shape (ids numbered the same every time)."""
        live, self.ids = self.ids, MessageIds("h")
        try:
            return await Session.replay(self)  # (slots: no zero-argument super)
        finally:
            self.ids = live


__all__ = ["V2Session"]
