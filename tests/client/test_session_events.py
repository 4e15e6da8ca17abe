"""`SessionState` and the chat's renderer on the version-neutral events: the kinds only v2
has, the plans by id, the cancelled tool call in both spellings, the mode as a config
option, and what the renderer shows of each (sans-IO: events as the wire reads them)."""

from __future__ import annotations

import io
from typing import Any

import acpstack.events as events
from acpstack.cli._render import Renderer
from acpstack.cli._view_plain import PlainView
from acpstack.client import ClientRuntime, SessionState
from acpstack.events import v1 as events_v1
from acpstack.events import v2 as events_v2
from acpstack.schema import v1 as acp


def v2_event(json: dict[str, Any]) -> events.Event:
    """An update as a v2 connection hands it on (read straight into its event)."""
    return events_v2.decode(json)


def text(t: str) -> acp.TextContent:
    return acp.TextContent(text=t)


def test_v2_plans_by_id_and_the_items_plan_as_the_plan() -> None:
    state = SessionState("s")
    items = {
        "type": "items",
        "planId": "p1",
        "entries": [
            {"content": "known", "priority": "high", "status": "completed"},
            {"content": "custom", "priority": "_urgent", "status": "cancelled"},
        ],
    }
    markdown = {"type": "markdown", "planId": "notes", "content": "# later"}
    for plan in (items, markdown):
        state.apply(v2_event({"sessionUpdate": "plan_update", "plan": plan}))
    # The entries keep the agent's own values (v2's are open).
    assert [(e.content, e.priority, e.status) for e in state.plan] == [
        ("known", "high", "completed"),
        ("custom", "_urgent", "cancelled"),
    ]
    assert set(state.plans) == {"p1", "notes"} and state.plans["notes"] == markdown
    state.apply(v2_event({"sessionUpdate": "plan_removed", "planId": "notes"}))
    assert len(state.plan) == 2 and set(state.plans) == {"p1"}
    state.apply(v2_event({"sessionUpdate": "plan_removed", "planId": "p1"}))
    assert state.plan == [] and state.plans == {}
    assert state.unknown_updates == []


def test_a_cancelled_tool_call_in_either_spelling() -> None:
    state = SessionState("s")
    state.apply(events.ToolCall(tool_call_id="a", title="Run", status="in_progress"))
    # v1: `failed` with the mark acpstack's agent adds; v2: `cancelled`.
    marked = {"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "failed"}
    state.apply(events_v1.decode({**marked, "_meta": {events_v1.CANCELLED_META: "cancelled"}}))
    state.apply(v2_event({"sessionUpdate": "tool_call_update", "toolCallId": "b", "title": "Edit"}))
    state.apply(
        v2_event({"sessionUpdate": "tool_call_update", "toolCallId": "b", "status": "cancelled"})
    )
    state.apply(events_v1.decode({**marked, "toolCallId": "c"}))  # a plain failure stays one
    assert [(t.tool_call_id, t.status) for t in state.tool_calls.values()] == [
        ("a", "cancelled"),
        ("b", "cancelled"),
        ("c", "failed"),
    ]


def test_v2_tool_calls_grow_by_content_chunks_and_say_when_they_can_be_cancelled() -> None:
    state = SessionState("s")
    first = {"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Run", "kind": "_x"}
    state.apply(v2_event({**first, "capabilities": {"cancel": {}}}))
    chunk = {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t"}
    state.apply(
        v2_event(
            {**chunk, "content": {"type": "content", "content": {"type": "text", "text": "a"}}}
        )
    )
    diff = {
        "type": "diff",
        "changes": [{"operation": "modify", "path": "/w/f", "fileType": "text"}],
        "patch": {"format": "git_patch", "text": "--- /w/f\n+++ /w/f\n-old\n+new\n"},
    }
    state.apply(v2_event({**chunk, "content": diff}))
    tool = state.tool_calls["t"]
    assert (tool.title, tool.kind, tool.cancellable) == ("Run", "_x", True)
    assert isinstance(tool.content[0], acp.Content)
    assert isinstance(tool.content[1], events.Diff) and tool.content[1].patch == diff["patch"]
    state.apply(
        v2_event({"sessionUpdate": "tool_call_update", "toolCallId": "t", "capabilities": None})
    )
    assert state.tool_calls["t"].cancellable is False


def test_state_terminals_whole_messages_and_the_mode_option() -> None:
    state = SessionState("s")
    state.apply(v2_event({"sessionUpdate": "state_update", "state": "running"}))
    assert state.state == "running"
    state.apply(
        v2_event(
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": "a"},
            }
        )
    )
    state.apply(
        v2_event(
            {
                "sessionUpdate": "agent_message",
                "messageId": "m",
                "content": [{"type": "text", "text": "whole"}],
            }
        )
    )
    state.apply(v2_event({"sessionUpdate": "terminal_update", "terminalId": "x", "command": "ls"}))
    state.apply(
        v2_event({"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "aGk="})
    )
    state.apply(
        v2_event(
            {"sessionUpdate": "terminal_update", "terminalId": "x", "exitStatus": {"exitCode": 3}}
        )
    )
    mode = {
        "configId": "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": "plan",
        "options": [{"value": "plan", "name": "Plan"}, {"value": "code", "name": "Code"}],
    }
    state.apply(v2_event({"sessionUpdate": "config_option_update", "configOptions": [mode]}))
    error = {"code": -32099, "message": "no"}
    state.apply(
        v2_event(
            {
                "sessionUpdate": "state_update",
                "state": "idle",
                "stopReason": "error",
                "error": error,
            }
        )
    )
    assert [m.text for m in state.messages] == ["whole"]
    terminal = state.agent_terminals["x"]
    assert (terminal.command, bytes(terminal.output), terminal.exit_code) == ("ls", b"hi", 3)
    assert [o.id for o in state.config_options] == ["mode"] and state.current_mode_id == "plan"
    assert (state.state, state.stop_reason, state.error) == ("idle", "error", error)


def shown(*updates: events.Event, session: str = "s") -> str:
    out = io.StringIO()
    runtime = ClientRuntime()
    runtime.register_session(session, "/tmp")
    renderer = Renderer(PlainView(out), runtime, rich=False)
    for update in updates:
        runtime.sessions[session].state.apply(update)
        renderer.on_update(session, update)
    renderer.end_turn(session)
    return out.getvalue()


def test_the_renderer_shows_v2_kinds_once() -> None:
    chunk = {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m1",
        "content": {"type": "text", "text": "streamed"},
    }
    whole = {
        "sessionUpdate": "agent_message",
        "messageId": "m1",
        "content": [{"type": "text", "text": "streamed"}],
    }
    replayed = {
        "sessionUpdate": "agent_message",
        "messageId": "m2",
        "content": [{"type": "text", "text": "replayed"}],
    }
    patch = {"format": "git_patch", "text": "--- a\n+++ b\n-old\n+PATCH-MARK\n"}
    call = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t",
        "title": "Edit f",
        "kind": "edit",
    }
    diff = {
        "type": "diff",
        "changes": [{"operation": "modify", "path": "/f", "fileType": "text"}],
        "patch": patch,
    }
    out = shown(
        v2_event(chunk),
        v2_event(whole),  # the chunks showed it: not again
        v2_event(replayed),  # never streamed: shown whole
        v2_event({**call, "status": "in_progress", "content": [diff]}),
        v2_event({**call, "status": "cancelled"}),
        v2_event({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    )
    assert out.count("streamed") == 1 and out.count("replayed") == 1
    assert out.count("PATCH-MARK") == 1
    assert "[tool] Edit f (cancelled)" in out
    assert "not understood" not in out


def test_the_renderer_shows_a_mode_once_whichever_update_says_it() -> None:
    option = {
        "id": "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": "plan",
        "options": [{"value": "plan", "name": "Plan"}],
    }
    out = shown(
        events.ConfigOptionUpdate(config_options=[option]),
        events.CurrentModeUpdate(current_mode_id="plan"),  # the same mode: said once
        events.CurrentModeUpdate(current_mode_id="code"),
    )
    assert out.count("mode: plan") == 1 and out.count("mode: code") == 1


def test_the_agents_echo_of_the_prompt_is_not_shown_again_but_a_replayed_one_is() -> None:
    echo = {
        "sessionUpdate": "user_message",
        "messageId": "u1",
        "content": [{"type": "text", "text": "ECHO-MARK"}],
    }
    out = io.StringIO()
    runtime = ClientRuntime()
    runtime.register_session("s", "/tmp")
    renderer = Renderer(PlainView(out), runtime, rich=False)
    renderer.begin_turn()  # the user typed a prompt: a v2 agent echoes it
    renderer.on_update("s", v2_event(echo))
    renderer.end_turn("s")
    assert "ECHO-MARK" not in out.getvalue()
    renderer.begin_turn(prompted=False)  # a history replayed: the user's messages are shown
    renderer.on_update("s", v2_event({**echo, "messageId": "u2"}))
    renderer.on_update(
        "s",
        events_v1.decode(
            {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "CHUNK-MARK"},
            }
        ),
    )
    renderer.end_turn("s")
    assert "you: ECHO-MARK" in out.getvalue() and "you: CHUNK-MARK" in out.getvalue()
