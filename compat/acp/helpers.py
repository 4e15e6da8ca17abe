"""Shorthands that build the common schema objects (the official SDK's `acp.helpers`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acp import _generated_schema as s

# The unions upstream's helpers name (imported from here by applications, e.g. fast-agent).
ContentBlock = s.ContentBlock
SessionUpdate = s.SessionUpdate
ToolCallContentVariant = s.ToolCallContent

__all__ = [
    "audio_block",
    "embedded_blob_resource",
    "embedded_text_resource",
    "image_block",
    "plan_entry",
    "resource_block",
    "resource_link_block",
    "session_notification",
    "start_edit_tool_call",
    "start_read_tool_call",
    "start_tool_call",
    "text_block",
    "tool_content",
    "tool_diff_content",
    "tool_terminal_ref",
    "update_agent_message",
    "update_agent_message_text",
    "update_agent_thought",
    "update_agent_thought_text",
    "update_available_commands",
    "update_current_mode",
    "update_plan",
    "update_tool_call",
    "update_user_message",
    "update_user_message_text",
]


def _some(values: Sequence[Any] | Iterable[Any] | None) -> list[Any] | None:
    return None if values is None else list(values)


def text_block(text: str) -> s.TextContentBlock:
    return s.TextContentBlock(type="text", text=text)


def image_block(data: str, mime_type: str, *, uri: str | None = None) -> s.ImageContentBlock:
    return s.ImageContentBlock(type="image", data=data, mime_type=mime_type, uri=uri)


def audio_block(data: str, mime_type: str) -> s.AudioContentBlock:
    return s.AudioContentBlock(type="audio", data=data, mime_type=mime_type)


def resource_link_block(
    name: str,
    uri: str,
    *,
    mime_type: str | None = None,
    size: int | None = None,
    description: str | None = None,
    title: str | None = None,
) -> s.ResourceContentBlock:
    return s.ResourceContentBlock(
        type="resource_link",
        name=name,
        uri=uri,
        mime_type=mime_type,
        size=size,
        description=description,
        title=title,
    )


def embedded_text_resource(
    uri: str, text: str, *, mime_type: str | None = None
) -> s.TextResourceContents:
    return s.TextResourceContents(uri=uri, text=text, mime_type=mime_type)


def embedded_blob_resource(
    uri: str, blob: str, *, mime_type: str | None = None
) -> s.BlobResourceContents:
    return s.BlobResourceContents(uri=uri, blob=blob, mime_type=mime_type)


def resource_block(resource: Any) -> s.EmbeddedResourceContentBlock:
    return s.EmbeddedResourceContentBlock(type="resource", resource=resource)


def tool_content(block: Any) -> s.ContentToolCallContent:
    return s.ContentToolCallContent(type="content", content=block)


def tool_diff_content(
    path: str, new_text: str, old_text: str | None = None
) -> s.FileEditToolCallContent:
    return s.FileEditToolCallContent(type="diff", path=path, new_text=new_text, old_text=old_text)


def tool_terminal_ref(terminal_id: str) -> s.TerminalToolCallContent:
    return s.TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


def plan_entry(content: str, *, priority: str = "medium", status: str = "pending") -> s.PlanEntry:
    return s.PlanEntry(content=content, priority=priority, status=status)


def update_plan(entries: Iterable[s.PlanEntry]) -> s.AgentPlanUpdate:
    return s.AgentPlanUpdate(session_update="plan", entries=list(entries))


def update_user_message(content: Any) -> s.UserMessageChunk:
    return s.UserMessageChunk(session_update="user_message_chunk", content=content)


def update_user_message_text(text: str) -> s.UserMessageChunk:
    return update_user_message(text_block(text))


def update_agent_message(content: Any) -> s.AgentMessageChunk:
    return s.AgentMessageChunk(session_update="agent_message_chunk", content=content)


def update_agent_message_text(text: str) -> s.AgentMessageChunk:
    return update_agent_message(text_block(text))


def update_agent_thought(content: Any) -> s.AgentThoughtChunk:
    return s.AgentThoughtChunk(session_update="agent_thought_chunk", content=content)


def update_agent_thought_text(text: str) -> s.AgentThoughtChunk:
    return update_agent_thought(text_block(text))


def update_available_commands(commands: Iterable[Any]) -> s.AvailableCommandsUpdate:
    return s.AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=list(commands)
    )


def update_current_mode(current_mode_id: str) -> s.CurrentModeUpdate:
    return s.CurrentModeUpdate(
        session_update="current_mode_update", current_mode_id=current_mode_id
    )


def session_notification(session_id: str, update: Any) -> s.SessionNotification:
    return s.SessionNotification(session_id=session_id, update=update)


def start_tool_call(
    tool_call_id: str,
    title: str,
    *,
    kind: str | None = None,
    status: str | None = None,
    content: Sequence[Any] | None = None,
    locations: Sequence[Any] | None = None,
    raw_input: Any | None = None,
    raw_output: Any | None = None,
) -> s.ToolCallStart:
    return s.ToolCallStart(
        session_update="tool_call",
        tool_call_id=tool_call_id,
        title=title,
        kind=kind,
        status=status,
        content=_some(content),
        locations=_some(locations),
        raw_input=raw_input,
        raw_output=raw_output,
    )


def start_read_tool_call(
    tool_call_id: str, title: str, path: str, *, extra_options: Sequence[Any] | None = None
) -> s.ToolCallStart:
    where = [s.ToolCallLocation(path=path)]
    return start_tool_call(
        tool_call_id,
        title,
        kind="read",
        status="pending",
        content=extra_options,
        locations=where,
        raw_input={"path": path},
    )


def start_edit_tool_call(
    tool_call_id: str,
    title: str,
    path: str,
    content: Any,
    *,
    extra_options: Sequence[Any] | None = None,
) -> s.ToolCallStart:
    where = [s.ToolCallLocation(path=path)]
    return start_tool_call(
        tool_call_id,
        title,
        kind="edit",
        status="pending",
        content=extra_options,
        locations=where,
        raw_input={"path": path, "content": content},
    )


def update_tool_call(
    tool_call_id: str,
    *,
    title: str | None = None,
    kind: str | None = None,
    status: str | None = None,
    content: Sequence[Any] | None = None,
    locations: Sequence[Any] | None = None,
    raw_input: Any | None = None,
    raw_output: Any | None = None,
) -> s.ToolCallProgress:
    return s.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_call_id,
        title=title,
        kind=kind,
        status=status,
        content=_some(content),
        locations=_some(locations),
        raw_input=raw_input,
        raw_output=raw_output,
    )
