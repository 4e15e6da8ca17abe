"""Subagents and inter-session messages (unstable ACP) as the chat shows them: what, and when.

A child session (`subagent_update`) is one line with its state; an inter-session message
(`session_message`, then `session_message_chunk`s) is one block with its text. While a
turn runs, a thing that still changes is *live* (updated in place: a line in the terminal's
live area, nothing on a pipe) and is shown for good once: a child when it goes idle, a
message when the agent sends anything else (a message has no end of its own), and
whatever is still live when the turn ends. Outside a turn each change is shown for good
at once. Nothing is shown twice: a child's line only when it differs from the one shown,
a message that grows after it was shown only with its new text.

`ChildSessions` decides; a `Sink` shows (the renderer's view, or `--format json` records).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from acpstack.client import SessionState, update_kind

if TYPE_CHECKING:
    from acpstack.cli._render import View

# The kinds shown here (see `acpstack.client.UPDATE_KINDS`).
SUBAGENT_UPDATES = ("subagent_update",)
MESSAGE_UPDATES = ("session_message", "session_message_chunk")
#: Characters of a message shown in the live area while it streams (all of it once shown).
LIVE_CHARS = 160
STATE_ICONS = {"running": "◐", "idle": "●", "requires_action": "◆"}
STATE_STYLES = {"running": "yellow", "idle": "green", "requires_action": "magenta"}


@dataclass(frozen=True)
class ChildView:
    """A child session as last patched by `subagent_update`."""

    parent: str
    session_id: str
    title: str | None
    description: str | None
    state: str | None  # running, idle, requires_action, unknown (None: not reported)
    stop_reason: str | None
    error: str | None

    @property
    def name(self) -> str:
        return self.title or self.description or self.session_id

    @property
    def resting(self) -> bool:
        """Idle: done with its foreground work (it may be messaged again)."""
        return self.state == "idle"


@dataclass(frozen=True)
class MessageView:
    """An inter-session message: `text` is what is not shown yet (all of it, at first)."""

    parent: str
    message_id: str
    sender: str | None  # a child's name, "main" (the session itself), or the session id
    recipient: str | None
    sender_session_id: str | None
    recipient_session_id: str | None
    text: str
    full_text: str
    continued: bool  # some of its text was shown already


Item = ChildView | MessageView


class Sink(Protocol):
    def live(self, key: str, item: Item) -> None:
        """`item` changed and may change again (show it in place)."""

    def final(self, key: str, item: Item) -> None:
        """Show `item` for good (and take it off the live area)."""

    def drop(self, key: str) -> None:
        """Take `key` off the live area without showing anything."""


@dataclass
class ChildSessions:
    states: Callable[[str], SessionState | None]  # a session's state by id
    sink: Sink
    in_turn: bool = False
    _shown_children: dict[str, ChildView] = field(default_factory=dict)  # key -> shown for good
    _shown_texts: dict[str, str] = field(default_factory=dict)  # message key -> text shown
    _live: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (session, id)

    def on_update(self, session_id: str, update: Any) -> bool:
        """Take one `session/update` (after the session's state applied it); True if it was
        a subagent or message update (shown here), False for any other kind."""
        kind = update_kind(update)
        if kind in SUBAGENT_UPDATES:
            self._finish_messages(session_id)
            self._child(session_id, update.session_id)
            return True
        if kind in MESSAGE_UPDATES:
            key = _key("message", session_id, update.message_id)
            self._finish_messages(session_id, keep=key)
            self._message(session_id, update.message_id, final=not self.in_turn)
            return True
        self._finish_messages(session_id)  # a message has no end: anything else ends it
        return False

    def begin_turn(self) -> None:
        self.in_turn = True

    def end_turn(self) -> None:
        """Show for good what is still live."""
        self.in_turn = False
        for key, (session_id, item_id) in list(self._live.items()):
            if key.startswith("message:"):
                self._message(session_id, item_id, final=True)
            else:
                self._child(session_id, item_id)

    def mark_shown(self, session_id: str) -> None:
        """Take what the session has so far as shown (a history that was not shown)."""
        state = self.states(session_id)
        if state is None:
            return
        for child_id in state.subagents:
            self._shown_children[_key("subagent", session_id, child_id)] = child_view(
                state, child_id
            )
        for message_id, message in state.session_messages.items():
            self._shown_texts[_key("message", session_id, message_id)] = message.text

    def _child(self, session_id: str, child_id: str) -> None:
        state = self.states(session_id)
        if state is None or child_id not in state.subagents:
            return
        key = _key("subagent", session_id, child_id)
        view = child_view(state, child_id)
        if self._shown_children.get(key) == view:  # back to what is on screen
            if self._live.pop(key, None) is not None:
                self.sink.drop(key)
        elif self.in_turn and not view.resting:
            self._live[key] = (session_id, child_id)
            self.sink.live(key, view)
        else:
            self._live.pop(key, None)
            self._shown_children[key] = view
            self.sink.final(key, view)

    def _message(self, session_id: str, message_id: str, *, final: bool) -> None:
        state = self.states(session_id)
        if state is None or message_id not in state.session_messages:
            return
        key = _key("message", session_id, message_id)
        view = message_view(state, message_id, self._shown_texts.get(key, ""))
        if not view.text:  # nothing it has is new (say, its content was cleared)
            if self._live.pop(key, None) is not None:
                self.sink.drop(key)
        elif not final:
            self._live[key] = (session_id, message_id)
            self.sink.live(key, view)
        else:
            self._live.pop(key, None)
            self._shown_texts[key] = view.full_text
            self.sink.final(key, view)

    def _finish_messages(self, session_id: str, keep: str | None = None) -> None:
        for key, (owner, message_id) in list(self._live.items()):
            if key.startswith("message:") and owner == session_id and key != keep:
                self._message(owner, message_id, final=True)


def _key(kind: str, session_id: str, item_id: str) -> str:
    return f"{kind}:{session_id}:{item_id}"


def child_view(state: SessionState, child_id: str) -> ChildView:
    fields = state.subagents[child_id].fields
    snapshot = fields.get("state")
    snapshot = snapshot if isinstance(snapshot, dict) else {}
    error = snapshot.get("error")
    return ChildView(
        parent=state.session_id,
        session_id=child_id,
        title=_text(fields.get("title")),
        description=_text(fields.get("description")),
        state=_text(snapshot.get("state")),
        stop_reason=_text(snapshot.get("stopReason")),
        error=_text(error.get("message")) if isinstance(error, dict) else None,
    )


def message_view(state: SessionState, message_id: str, shown: str) -> MessageView:
    """The message; `text` is what follows `shown` (all of it if it no longer starts so)."""
    message = state.session_messages[message_id]
    sender = _text(message.fields.get("senderSessionId"))
    recipient = _text(message.fields.get("recipientSessionId"))
    text = message.text
    continued = bool(shown) and text.startswith(shown)
    return MessageView(
        parent=state.session_id,
        message_id=message_id,
        sender=_who(state, sender),
        recipient=_who(state, recipient),
        sender_session_id=sender,
        recipient_session_id=recipient,
        text=text[len(shown) :] if continued else text,
        full_text=text,
        continued=continued,
    )


def _who(state: SessionState, session_id: str | None) -> str | None:
    """A session as the user knows it: "main" (the chat's session), a child's title."""
    if session_id is None:
        return None
    if session_id == state.session_id:
        return "main"
    child = state.subagents.get(session_id)
    title = child.fields.get("title") if child is not None else None
    return title if isinstance(title, str) and title else session_id


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- what a sink shows ---------------------------------------------------------------------


def child_record(view: ChildView) -> dict[str, Any]:
    """The `--format json` record of a child's change."""
    return {
        "type": "subagent",
        "sessionId": view.parent,
        "subagentSessionId": view.session_id,
        "title": view.title,
        "description": view.description,
        "state": view.state,
        "stopReason": view.stop_reason,
        "error": view.error,
    }


def message_record(view: MessageView) -> dict[str, Any]:
    """The `--format json` record of an inter-session message (its whole text so far)."""
    return {
        "type": "session_message",
        "sessionId": view.parent,
        "messageId": view.message_id,
        "senderSessionId": view.sender_session_id,
        "recipientSessionId": view.recipient_session_id,
        "text": view.full_text,
    }


class RecordSink:
    """`--format json`: a record per change of a child, one per message once it is shown
    (again, with its whole text, if it grows after that)."""

    def __init__(self, write: Callable[[dict[str, Any]], None]) -> None:
        self.write = write
        self._last: dict[str, ChildView] = {}

    def live(self, key: str, item: Item) -> None:
        if isinstance(item, ChildView):
            self.final(key, item)

    def drop(self, key: str) -> None:
        pass

    def final(self, key: str, item: Item) -> None:
        if isinstance(item, MessageView):
            self.write(message_record(item))
        elif self._last.get(key) != item:
            self._last[key] = item
            self.write(child_record(item))


class ViewSink:
    """The chat's view: a live line while a thing changes, printed once for good (a
    child's line again only when it reads differently: not for a change it does not show,
    such as its description)."""

    def __init__(self, view: View, *, rich: bool) -> None:
        self.view = view
        self.rich = rich
        self._printed: dict[str, str] = {}  # key -> a child's line as last printed

    def live(self, key: str, item: Item) -> None:
        self.view.tool_live(key, [item_text(item, rich=self.rich, live=True)])

    def final(self, key: str, item: Item) -> None:
        text = item_text(item, rich=self.rich)
        if isinstance(item, ChildView):
            if self._printed.get(key) == text.plain:
                self.drop(key)
                return
            self._printed[key] = text.plain
        self.view.tool_done(key, [text])

    def drop(self, key: str) -> None:
        self.view.tool_gone(key)


def item_text(item: Item, *, rich: bool, live: bool = False) -> Text:
    if isinstance(item, ChildView):
        return _child_text(item, rich)
    return _message_text(item, rich, live)


def _child_text(view: ChildView, rich: bool) -> Text:
    state = view.state or "no state reported"
    if view.stop_reason:
        state += f": {view.stop_reason}"
    if view.error:
        state += f" ({view.error})"
    if not rich:
        return Text(f"[subagent] {view.name} ({state})")
    style = "red" if view.error else STATE_STYLES.get(view.state or "", "blue")
    icon = STATE_ICONS.get(view.state or "", "○")
    return Text(f"{icon} {view.name}", style=style) + Text(f"  subagent · {state}", style="dim")


def _message_text(view: MessageView, rich: bool, live: bool) -> Text:
    route = " → ".join(who for who in (view.sender, view.recipient) if who) or "message"
    head = route + (" (continued)" if view.continued else "") + ": "
    text = view.text.strip()
    if live and len(text) > LIVE_CHARS:
        text = "…" + text[-LIVE_CHARS:]
    if not rich:
        return Text(f"[message] {head}{text}")
    return Text(f"✉ {head}", style="bold blue") + Text(text)
