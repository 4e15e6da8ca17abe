"""A protocol version 2 agent's answers in the shapes `ClientRuntime`'s calls return.

The runtime's calls keep one signature and one result type whatever the agent speaks
(v1's): `initialize` (what this client can do with the agent), `new_session` and the
resumes (config options: `configId` is `id`, `groupId` is `group`; an option of a type v1
does not know is left out, as clients should), and the tool call of a permission request
(its content items). Session updates do not come here: both versions' are read straight
into the version-neutral events (`acpstack.events`) that `SessionState` keeps.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.client import _v2_values as values
from acpstack.client._v2_auth import auth_method
from acpstack.schema import v1 as acp
from acpstack.schema import v2


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


__all__ = ["block", "config_options", "initialize_result", "tool_content"]
