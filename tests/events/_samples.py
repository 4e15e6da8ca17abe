"""One neutral event (or more) per update kind, for the codec tests and the benchmark."""

from __future__ import annotations

from acpstack import events as ev
from acpstack.schema import v1

TEXT = v1.TextContent(text="hello")
LINK = v1.ResourceLink(uri="file:///w/a.py", name="a.py")
PATCH = {"format": "git_patch", "text": "diff --git /w/a.py /w/a.py\n"}
V2_DIFF = ev.Diff(changes=[{"operation": "modify", "path": "/w/a.py"}], patch=PATCH)
V1_DIFF = ev.Diff(path="/w/a.py", old_text="a\n", new_text="b\n")

# Events both versions can say (v2: message ids given, diffs in v2's shape, no client
# terminal): each kind's sample round-trips through the versions that have the kind.
SAMPLES: list[ev.KnownEvent] = [
    ev.UserMessageChunk(content=TEXT, message_id="u1"),
    ev.AgentMessageChunk(content=TEXT, message_id="m1"),
    ev.AgentThoughtChunk(content=LINK, message_id="t1", meta={"k": 1}),
    ev.UserMessage(message_id="u1", content=[TEXT, LINK]),
    ev.AgentMessage(message_id="m1", content=[TEXT]),
    ev.AgentThought(message_id="t1", content=None),
    ev.SessionMessageChunk(message_id="s1", content=TEXT),
    ev.SessionMessage(message_id="s1", sender_session_id="other", content=[TEXT]),
    ev.ToolCall(
        tool_call_id="c1",
        title="Read a.py",
        kind="read",
        status="pending",
        locations=[v1.ToolCallLocation(path="/w/a.py", line=3)],
        raw_input={"p": 1},
    ),
    ev.ToolCallUpdate(
        tool_call_id="c1",
        status="completed",
        content=[v1.Content(content=TEXT), V2_DIFF],
        raw_output="ok",
    ),
    ev.ToolCallContentChunk(tool_call_id="c1", content=v1.Content(content=TEXT)),
    ev.Plan(entries=[ev.PlanEntry(content="step", priority="high", status="pending")]),
    ev.PlanUpdate(
        plan={
            "type": "items",
            "planId": "p1",
            "entries": [{"content": "x", "priority": "low", "status": "completed"}],
        }
    ),
    ev.PlanRemoved(plan_id="p1"),
    ev.AvailableCommandsUpdate(
        available_commands=[
            {"name": "init", "description": "Make AGENTS.md"},
            {"name": "review", "description": "Review", "input": {"hint": "a branch"}},
        ]
    ),
    ev.CurrentModeUpdate(current_mode_id="code"),
    ev.ConfigOptionUpdate(
        config_options=[
            {
                "id": "mode",
                "name": "Mode",
                "category": "mode",
                "type": "select",
                "currentValue": "code",
                "options": [
                    {"group": "g", "name": "Group", "options": [{"value": "code", "name": "Code"}]}
                ],
            }
        ]
    ),
    ev.SessionInfoUpdate(title="A title", updated_at="2026-01-01T00:00:00Z"),
    ev.UsageUpdate(used=10, size=100, cost={"amount": 0.5, "currency": "USD"}),
    ev.Notice(severity="warning", title="Careful", description="why"),
    ev.CompactionUpdate(compaction_id="k1", status="completed", summary=[TEXT]),
    ev.CompactionSummaryChunk(compaction_id="k1", content=TEXT),
    ev.SubagentUpdate(session_id="child", title="Helper"),
    ev.StateUpdate(state="idle", stop_reason="end_turn"),
    ev.TerminalUpdate(terminal_id="t1", command="ls", exit_status={"exitCode": 0}),
    ev.TerminalOutputChunk(terminal_id="t1", data="aGk="),
]

# Events in v1's terms (v1 diffs, chunks without ids, a client terminal).
V1_SAMPLES: list[ev.KnownEvent] = [
    ev.AgentMessageChunk(content=TEXT),
    ev.ToolCall(tool_call_id="c2", title="Edit", kind="edit", content=[V1_DIFF]),
    ev.ToolCallUpdate(tool_call_id="c2", content=[v1.Terminal(terminal_id="term")]),
]
