"""What the chat shows of subagents and inter-session messages (unstable ACP), and when, in
process: real `SessionState`s fed real unstable updates, a sink that records what it was
asked to show, and the real renderer writing plain text into a string."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console
from rich.text import Text

from acpstack.cli._chat_children import (
    ChildSessions,
    ChildView,
    Item,
    MessageView,
    RecordSink,
)
from acpstack.cli._render import Renderer
from acpstack.cli._view_live import LiveView
from acpstack.cli._view_plain import PlainView
from acpstack.client import ClientRuntime, SessionState
from acpstack.events import v1 as events_v1
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu

MAIN = "main-session"


class Shown:
    """A sink that keeps what it was asked to do, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Item | None]] = []

    def live(self, key: str, item: Item) -> None:
        self.events.append(("live", key, item))

    def final(self, key: str, item: Item) -> None:
        self.events.append(("final", key, item))

    def drop(self, key: str) -> None:
        self.events.append(("drop", key, None))

    def finals(self) -> list[Item | None]:
        return [item for kind, _, item in self.events if kind == "final"]


class Feed:
    def __init__(self) -> None:
        self.state = SessionState(MAIN)
        self.shown = Shown()
        self.children = ChildSessions(lambda sid: self.state if sid == MAIN else None, self.shown)

    def send(self, update: Any) -> None:
        event = events_v1.decode(update)  # as the runtime hands it on
        self.state.apply(event)
        self.children.on_update(MAIN, event)


def child(state: str | None = None, **fields: Any) -> acpu.SubagentUpdate:
    snapshots: dict[str, Any] = {
        "running": acpu.RunningStateUpdate(),
        "idle": acpu.IdleStateUpdate(stop_reason="end_turn"),
        "requires_action": acpu.RequiresActionStateUpdate(),
    }
    update = acpu.SubagentUpdate(session_id="kid", **fields)
    if state is not None:
        update.state = snapshots[state]
    return update


def message(text: str) -> acpu.SessionMessage:
    return acpu.SessionMessage(
        message_id="m1",
        sender_session_id=MAIN,
        recipient_session_id="kid",
        content=[acp.TextContent(text=text)],
    )


def chunk(text: str) -> acpu.SessionMessageChunk:
    return acpu.SessionMessageChunk(message_id="m1", content=acp.TextContent(text=text))


def say(text: str) -> acp.AgentMessageChunk:
    return acp.AgentMessageChunk(content=acp.TextContent(text=text))


def test_in_a_turn_things_are_live_then_shown_once_for_good() -> None:
    feed = Feed()
    feed.children.begin_turn()
    feed.send(child("running", title="Researcher"))
    feed.send(message("Find the bug. "))
    feed.send(chunk("Report back."))
    assert [kind for kind, _, _ in feed.shown.events] == ["live", "live", "live"]
    feed.send(child("idle"))  # anything else ends the message; idle is final for a child
    feed.send(say("done"))
    feed.children.end_turn()
    finals = feed.shown.finals()
    assert len(finals) == 2
    shown_message, shown_child = finals
    assert isinstance(shown_message, MessageView)
    assert shown_message.text == "Find the bug. Report back."
    assert (shown_message.sender, shown_message.recipient) == ("main", "Researcher")
    assert isinstance(shown_child, ChildView)
    assert (shown_child.name, shown_child.state, shown_child.stop_reason) == (
        "Researcher",
        "idle",
        "end_turn",
    )


def test_what_is_still_live_is_shown_when_the_turn_ends() -> None:
    feed = Feed()
    feed.children.begin_turn()
    feed.send(child("running", title="Researcher"))
    feed.send(message("still typing"))
    assert feed.shown.finals() == []
    feed.children.end_turn()
    kinds = {type(item).__name__: item for item in feed.shown.finals()}
    assert set(kinds) == {"ChildView", "MessageView"}
    assert isinstance(kinds["ChildView"], ChildView) and kinds["ChildView"].state == "running"
    feed.children.end_turn()  # nothing is shown twice
    assert len(feed.shown.finals()) == 2


def test_a_message_that_grows_after_it_was_shown_shows_only_its_new_text() -> None:
    feed = Feed()
    feed.children.begin_turn()
    feed.send(message("first part."))
    feed.send(say("meanwhile"))  # ends the message: shown
    feed.send(chunk(" second part."))
    feed.children.end_turn()
    first, second = feed.shown.finals()
    assert isinstance(first, MessageView) and isinstance(second, MessageView)
    assert (first.text, first.continued) == ("first part.", False)
    assert (second.text, second.continued) == (" second part.", True)
    assert second.full_text == "first part. second part."


def test_outside_a_turn_each_change_is_shown_at_once() -> None:
    feed = Feed()
    feed.send(child("running", title="Researcher"))
    feed.send(child("requires_action"))
    feed.send(child("requires_action"))  # the same again: nothing new
    states = [item.state for item in feed.shown.finals() if isinstance(item, ChildView)]
    assert states == ["running", "requires_action"]
    assert all(kind == "final" for kind, _, _ in feed.shown.events)


def test_a_child_back_to_what_is_shown_is_taken_off_the_live_area() -> None:
    feed = Feed()
    feed.children.begin_turn()
    feed.send(child("idle", title="Researcher"))  # shown for good
    feed.send(child("running"))  # live again
    feed.send(child("idle"))  # the same as shown: no second line
    assert [kind for kind, _, _ in feed.shown.events] == ["final", "live", "drop"]


def test_a_history_that_was_not_shown_stays_unshown() -> None:
    feed = Feed()
    feed.state.apply(child("idle", title="Researcher"))
    feed.state.apply(message("old news"))
    feed.children.mark_shown(MAIN)
    feed.send(child("idle"))
    feed.send(chunk(" and new"))
    finals = feed.shown.finals()
    assert len(finals) == 1 and isinstance(finals[0], MessageView)
    assert finals[0].text == " and new"


def test_updates_for_unknown_sessions_or_children_show_nothing() -> None:
    feed = Feed()
    update = child("running", title="X")
    assert feed.children.on_update("no-such-session", events_v1.decode(update)) is True
    assert (
        feed.children.on_update(MAIN, events_v1.decode(chunk("for a message never announced")))
        is True
    )
    assert feed.shown.events == []


def test_json_records_a_record_per_child_change_and_each_message() -> None:
    records: list[dict[str, Any]] = []
    state = SessionState(MAIN)
    children = ChildSessions(lambda sid: state, RecordSink(records.append))

    def send(update: Any) -> None:
        event = events_v1.decode(update)
        state.apply(event)
        children.on_update(MAIN, event)

    children.begin_turn()
    send(child("running", title="Researcher", description="reads"))
    send(child("running"))  # the same again, still live: no record
    send(message("Find the bug."))
    send(child("idle"))
    send(child(description=None))  # a change the terminal does not show: still a record
    send(child(description=None))  # no change: no record
    children.end_turn()
    assert [r["type"] for r in records] == ["subagent", "session_message", "subagent", "subagent"]
    assert records[0] == {
        "type": "subagent",
        "sessionId": MAIN,
        "subagentSessionId": "kid",
        "title": "Researcher",
        "description": "reads",
        "state": "running",
        "stopReason": None,
        "error": None,
    }
    assert records[1]["text"] == "Find the bug." and records[1]["recipientSessionId"] == "kid"
    assert records[3]["description"] is None and records[3]["state"] == "idle"


def test_the_renderer_prints_each_line_once_on_a_pipe() -> None:
    out = io.StringIO()
    runtime = ClientRuntime()
    runtime.register_session(MAIN, "/")
    renderer = Renderer(PlainView(out), runtime, rich=False)

    def send(update: Any) -> None:
        event = events_v1.decode(update)
        runtime.sessions[MAIN].state.apply(event)
        renderer.on_update(MAIN, event)

    renderer.begin_turn()
    send(child("running", title="Researcher", description="reads the code"))
    send(message("Find the bug. "))
    send(chunk("Report back."))
    send(child("idle"))
    send(child(description=None))  # not on the line: not printed again
    send(say("child done"))
    send(chunk(" P.S."))  # the last thing of the turn: shown when the turn ends
    assert out.getvalue().splitlines()[-1] == "child done"
    renderer.end_turn(MAIN)
    assert out.getvalue().splitlines() == [
        "[message] main → Researcher: Find the bug. Report back.",
        "[subagent] Researcher (idle: end_turn)",
        "child done",
        "[message] main → Researcher (continued): P.S.",
    ]


def test_a_live_line_taken_away_leaves_the_live_area() -> None:
    """The terminal's view (no event loop here: it redraws at once)."""
    out = io.StringIO()
    console = Console(file=out, width=60, height=20, force_terminal=True, color_system=None)
    view = LiveView(console)
    view.tool_live("subagent:s:kid", [Text("◐ Researcher  subagent · running")])
    view.tool_live("tool", [Text("◐ Build  execute · in progress")])
    assert view._rows == 2
    mark = len(out.getvalue())
    view.tool_gone("subagent:s:kid")
    assert view._rows == 1  # redrawn without it
    view.tool_gone("never-live")  # nothing to take away: nothing happens
    view.close()
    after = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()[mark:])
    assert "Build" in after and "Researcher" not in after  # not printed for good either
