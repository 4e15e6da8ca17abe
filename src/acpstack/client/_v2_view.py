"""A protocol version 2 session in the client's model of a session.

`ClientRuntime` presents one model whatever the agent speaks: `SessionState`, the
`on_update` callback and the results of its calls have the v1 shape, so an application
written against them (`acpstack chat`) works with v1 and v2 agents alike. On a v2
connection each update is mapped here, in one place, to what it means in that model:

- message chunks are chunks; a whole-message upsert (`agent_message`, ...) replaces the
  message's content in the state (a message seen for the first time also goes to
  `on_update` as chunks);
- the first `tool_call_update` of an id is a `tool_call`, later ones are updates;
  `tool_call_content_chunk` appends to the call's content (an update with all of it);
- a structured diff becomes a text block with its patch (the model's diff needs the old
  and new text, which a patch does not carry); an agent terminal is a `terminal` block
  whose output the state keeps (`SessionState.agent_terminals`); whether a tool call or
  an agent terminal is cancellable now (`capabilities.cancel`) is kept in the state;
- `plan_update` (items) is the plan; the config option of category "mode" is the mode;
- `state_update` sets `SessionState.state` and `stop_reason`; it has no model update;
- an enum value of v2 (all open) that the model's closed v1 `Literal` lacks gets the
  fallback `_v2_values.py` names (a plan entry's `cancelled` is `pending`, a tool call's
  unknown kind `other`); a tool call's state (`ToolCallState`) keeps the agent's own
  kind and status.

What the model cannot hold is not lost: `ClientRuntime(on_wire_update=...)` gets every
update exactly as it arrived.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.client import _v2_values as values
from acpstack.client._state import AgentTerminal, SessionState, Speaker
from acpstack.client._v2_auth import auth_method
from acpstack.schema import UnknownSessionUpdate, v2
from acpstack.schema import v1 as acp

log = logging.getLogger("acpstack.client")

_CHUNKS: dict[type, tuple[Speaker, type]] = {
    v2.UserMessageChunk: ("user", acp.UserMessageChunk),
    v2.AgentMessageChunk: ("agent", acp.AgentMessageChunk),
    v2.AgentThoughtChunk: ("thought", acp.AgentThoughtChunk),
}
_MESSAGES: dict[type, tuple[Speaker, type]] = {
    v2.UserMessage: ("user", acp.UserMessageChunk),
    v2.AgentMessage: ("agent", acp.AgentMessageChunk),
    v2.AgentThought: ("thought", acp.AgentThoughtChunk),
}
# The state updates that start, pause or end a turn (`ClientRuntime.prompt` waits on them).
TURN_STATES = (v2.IdleStateUpdate, v2.RunningStateUpdate, v2.RequiresActionStateUpdate)
# Updates with the same fields in both versions.
_SAME: dict[type, type] = {
    v2.SessionInfoUpdate: acp.SessionInfoUpdate,
    v2.UsageUpdate: acp.UsageUpdate,
    v2.Notice: acp.Notice,
    v2.CompactionUpdate: acp.CompactionUpdate,
    v2.CompactionSummaryChunk: acp.CompactionSummaryChunk,
}


def _convert(value: Any, tp: Any) -> Any:
    plain = msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value
    return msgspec.convert(plain, tp)  # to a v1 type: no open union


def block(value: Any) -> Any:
    """A content block (the same five kinds in both versions); an unknown kind is kept
    as its JSON object."""
    if type(value) is v2.TextContent and value.annotations is UNSET and value.meta is UNSET:
        return acp.TextContent(text=value.text)  # most blocks: no round trip through JSON
    try:
        return _convert(value, acp.ContentBlock)
    except msgspec.ValidationError:
        return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


def tool_content(item: Any) -> Any:
    if isinstance(item, v2.Content):
        return acp.Content(content=block(item.content))
    if isinstance(item, v2.Terminal):
        return acp.Terminal(terminal_id=item.terminal_id)
    if isinstance(item, v2.Diff):
        if isinstance(item.patch, v2.DiffPatch):
            text = f"```diff\n{item.patch.text.rstrip()}\n```"
        else:
            text = "\n".join(f"{getattr(c, 'operation', '?')} {c.path}" for c in item.changes)
        return acp.Content(content=acp.TextContent(text=text))
    return item  # unknown: kept as it came


def _contents(value: Any) -> Any:
    return [tool_content(c) for c in value] if isinstance(value, list) else value


def updates(update: Any, state: SessionState) -> list[Any]:
    """Apply one v2 update to `state`; the model's updates to report for it."""
    kind = type(update)
    chunk = _CHUNKS.get(kind)
    if chunk is not None:  # most updates: one model update, applied as it is made
        model = chunk[1](content=block(update.content), message_id=update.message_id)
        state.apply(model)
        return [model]
    if kind in _MESSAGES:
        return _message(update, state)
    if isinstance(update, v2.ToolCallUpdate):
        model = _applied(state, [_tool_call(update, state)])
        _keep_exact(update, state)
        return model
    if isinstance(update, v2.ToolCallContentChunk):
        tool = state.tool_calls.get(update.tool_call_id)
        content = [*(tool.content if tool else []), tool_content(update.content)]
        change = acp.SessionUpdateToolCallUpdate(tool_call_id=update.tool_call_id, content=content)
        return _applied(state, [change])
    if isinstance(
        update, v2.IdleStateUpdate | v2.RunningStateUpdate | v2.RequiresActionStateUpdate
    ):
        _set_state(update, state)
        return []
    if isinstance(update, v2.TerminalUpdate | v2.TerminalOutputChunk):
        _terminal(update, state)
        return []
    return _applied(state, _simple(update, state))


def _simple(update: Any, state: SessionState) -> list[Any]:
    if isinstance(update, v2.PlanUpdate):
        plan = update.plan
        if isinstance(plan, v2.PlanItems):
            entries = [
                acp.PlanEntry(
                    content=e.content,
                    priority=values.plan_priority(e.priority),
                    status=values.plan_status(e.status),
                )
                for e in plan.entries
            ]
            return [acp.Plan(entries=entries)]
        return [UnknownSessionUpdate.of(msgspec.to_builtins(update))]
    if isinstance(update, v2.AvailableCommandsUpdate):
        commands = [c for c in map(command, update.available_commands) if c is not None]
        return [acp.AvailableCommandsUpdate(available_commands=commands)]
    if isinstance(update, v2.ConfigOptionUpdate):
        options = config_options(update.config_options)
        mode = current_mode(options)
        mode_update = [] if mode is None else [acp.CurrentModeUpdate(current_mode_id=mode)]
        return [acp.ConfigOptionUpdate(config_options=options), *mode_update]
    if type(update) in _SAME:
        try:
            return [_convert(update, _SAME[type(update)])]
        except msgspec.ValidationError:
            return [UnknownSessionUpdate.of(msgspec.to_builtins(update))]
    if isinstance(update, UnknownSessionUpdate):
        if update.session_update == "state_update":
            state.state = str(update.data.get("state"))  # custom or newer: busy, not idle
        return [update]
    return [UnknownSessionUpdate.of(msgspec.to_builtins(update))]


def _applied(state: SessionState, model: list[Any]) -> list[Any]:
    for item in model:
        state.apply(item)
    return model


def _message(update: Any, state: SessionState) -> list[Any]:
    speaker, cls = _MESSAGES[type(update)]
    if update.content is UNSET:
        return []  # only `_meta` changed
    blocks = [block(b) for b in update.content or []]
    new = state.replace_message(speaker, update.message_id, blocks)
    return [cls(content=b, message_id=update.message_id) for b in blocks] if new else []


def _tool_call(update: v2.ToolCallUpdate, state: SessionState) -> Any:
    fields: dict[str, Any] = {}
    for name in ("title", "kind", "status", "locations", "raw_input", "raw_output"):
        value = getattr(update, name)
        if value is not UNSET:
            fields[name] = value
    if isinstance(fields.get("locations"), list):
        fields["locations"] = [_convert(loc, acp.ToolCallLocation) for loc in fields["locations"]]
    if "kind" in fields:
        fields["kind"] = values.tool_kind(fields["kind"])
    if "status" in fields:
        fields["status"] = values.tool_status(fields["status"])
    if update.content is not UNSET:
        fields["content"] = _contents(update.content)
    if update.tool_call_id in state.tool_calls:
        return acp.SessionUpdateToolCallUpdate(tool_call_id=update.tool_call_id, **fields)
    created = {k: v for k, v in fields.items() if v is not None}
    created.setdefault("title", "")
    return acp.ToolCall(tool_call_id=update.tool_call_id, **created)


def _keep_exact(update: v2.ToolCallUpdate, state: SessionState) -> None:
    """The state keeps the agent's own kind and status (its fields are plain strings, as
    it keeps a stop reason); only the model's v1 updates hold the fallbacks."""
    tool = state.tool_calls[update.tool_call_id]
    if isinstance(update.kind, str):
        tool.kind = update.kind
    if isinstance(update.status, str):
        tool.status = update.status
    tool.cancellable = _cancel_patch(update.capabilities, tool.cancellable)


def _cancel_patch(capabilities: Any, was: bool) -> bool:
    """A `capabilities` patch of a tool call or terminal: omitted leaves it, `null`
    clears it, an object replaces it (cancellable if its `cancel` is an object)."""
    if capabilities is UNSET:
        return was
    cancel = getattr(capabilities, "cancel", None)
    return cancel is not None and cancel is not UNSET


def _set_state(update: Any, state: SessionState) -> None:
    state.state = str(type(update).__struct_config__.tag)
    if isinstance(update, v2.IdleStateUpdate):
        # A repeated idle snapshot may carry the last stop reason again: it is not a new
        # completion (ClientRuntime.prompt waits for the idle that follows its prompt).
        stop = update.stop_reason
        state.stop_reason = stop if isinstance(stop, str) else None
        error = update.error
        state.error = msgspec.to_builtins(error) if isinstance(error, v2.Error) else None


def _terminal(update: v2.TerminalUpdate | v2.TerminalOutputChunk, state: SessionState) -> None:
    tid = update.terminal_id
    terminal = state.agent_terminals.setdefault(tid, AgentTerminal(tid))
    if isinstance(update, v2.TerminalOutputChunk):
        terminal.output += _bytes(update.data, tid)
        return
    if isinstance(update.output, v2.TerminalOutput):
        terminal.output = bytearray(_bytes(update.output.data, tid))
    if isinstance(update.command, str):
        terminal.command = update.command
    terminal.cancellable = _cancel_patch(update.capabilities, terminal.cancellable)
    status = update.exit_status
    if isinstance(status, v2.TerminalExitStatus):
        terminal.exited = True
        terminal.exit_code = status.exit_code if isinstance(status.exit_code, int) else None
        terminal.signal = status.signal if isinstance(status.signal, str) else None


def _bytes(data: str, terminal_id: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        log.warning("terminal %s: output that is not base64 was left out", terminal_id)
        return b""


def command(value: Any) -> acp.AvailableCommand | None:
    if isinstance(value, v2.Command):
        hint = value.input.hint if isinstance(value.input, v2.TextCommandInput) else None
        return acp.AvailableCommand(
            name=value.name,
            description=value.description,
            input=acp.UnstructuredCommandInput(hint=hint) if hint is not None else UNSET,
        )
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return acp.AvailableCommand(
            name=value["name"], description=str(value.get("description", ""))
        )
    return None


def config_options(options: Any) -> list[acp.SessionConfigOption]:
    """v2 options as the model's (`configId` is `id`, `groupId` is `group`); options of
    a type this model does not know are left out, as clients should."""
    out = []
    for option in options if isinstance(options, list) else []:
        if not isinstance(option, v2.SessionConfigOption):
            continue
        kind = values.config_option_type(option.type)
        if kind is None:
            continue
        choices: Any = UNSET
        if isinstance(option.options, list):
            choices = [_choice(c) for c in option.options]
        out.append(
            acp.SessionConfigOption(
                id=option.config_id,
                name=option.name,
                description=option.description,
                category=option.category,
                type=kind,
                current_value=option.current_value,
                options=choices,
            )
        )
    return out


def _choice(choice: Any) -> Any:
    if isinstance(choice, v2.SessionConfigSelectGroup):
        return acp.SessionConfigSelectGroup(
            group=choice.group_id,
            name=choice.name,
            options=[_convert(o, acp.SessionConfigSelectOption) for o in choice.options],
        )
    return _convert(choice, acp.SessionConfigSelectOption)


def current_mode(options: list[acp.SessionConfigOption]) -> str | None:
    """The mode: the current value of the option of category "mode"."""
    for option in options:
        if option.category == "mode" and isinstance(option.current_value, str):
            return option.current_value
    return None


def initialize_result(result: v2.InitializeResponse) -> acp.InitializeResponse:
    """The agent's v2 answer as the model's: what this client can do with the agent
    (history is replayed through `session/resume`, so `loadSession` is true)."""
    caps = result.capabilities if isinstance(result.capabilities, v2.AgentCapabilities) else None
    session = (
        caps.session
        if caps is not None and isinstance(caps.session, v2.SessionCapabilities)
        else None
    )
    model = acp.AgentCapabilities(load_session=session is not None)
    if session is not None:
        prompt = session.prompt if isinstance(session.prompt, v2.PromptCapabilities) else None
        model.prompt_capabilities = acp.PromptCapabilities(
            image=prompt is not None and _on(prompt.image),
            audio=prompt is not None and _on(prompt.audio),
            embedded_context=prompt is not None and _on(prompt.embedded_context),
        )
        mcp = session.mcp if isinstance(session.mcp, v2.McpCapabilities) else None
        model.mcp_capabilities = acp.McpCapabilities(http=mcp is not None and _on(mcp.http))
        model.session_capabilities = acp.SessionCapabilities(
            list=acp.SessionListCapabilities(),
            resume=acp.SessionResumeCapabilities(),
            close=acp.SessionCloseCapabilities(),
            delete=acp.SessionDeleteCapabilities() if _on(session.delete) else UNSET,
            additional_directories=acp.SessionAdditionalDirectoriesCapabilities()
            if _on(session.additional_directories)
            else UNSET,
        )
    offered = result.auth_methods if isinstance(result.auth_methods, list) else []
    methods = [m for m in map(auth_method, offered) if m is not None]
    info = result.info
    return acp.InitializeResponse(
        protocol_version=result.protocol_version,
        agent_capabilities=model,
        auth_methods=methods,
        agent_info=acp.Implementation(name=info.name, version=info.version, title=info.title),
    )


def _on(marker: Any) -> bool:
    return marker is not UNSET and marker is not None


__all__ = [
    "TURN_STATES",
    "block",
    "config_options",
    "current_mode",
    "initialize_result",
    "tool_content",
    "updates",
]
