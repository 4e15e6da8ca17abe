"""The session's MCP tools for the reference agent: names for the model, and running a call.

Each MCP tool is offered to the model as an OpenAI function named
`mcp__<server>__<tool>`, with characters outside `[A-Za-z0-9_-]` replaced by `_`; a name
longer than 64 characters, or one that two tools would share, is shortened and given a
hash suffix. A call shows up in the client as an ACP tool call (kind "read" for tools the
server annotates read-only, "other" otherwise) with the arguments as `rawInput` and the
result as its content. Tools not annotated `readOnlyHint: true` run only after the user
approves them through `session/request_permission`.

Without the `mcp` extra the agent connects no MCP server: the servers a client passes are
then named as not connected, with the fix (`not_connected`, shown once per session and by
`/tools`), never silently left out.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from acpstack.agent import McpServerError, McpTool, Session, Turn, text_content
from acpstack.cli._redact import Redactor, is_secret_name, url_secrets
from acpstack.schema import v1 as acp

log = logging.getLogger("acpstack.cli")

MAX_NAME = 64
CALL_TIMEOUT = 300.0
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class McpToolIndex:
    """The session's MCP tools, by the function name the model knows them by."""

    tools: dict[str, McpTool] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # server name -> why it is not available
    # The servers the client passed that are not connected: the `mcp` extra is missing.
    unconnected: list[str] = field(default_factory=list)

    def definitions(self) -> list[dict[str, Any]]:
        return [_definition(name, tool) for name, tool in self.tools.items()]

    def find(self, server: str, tool: str) -> McpTool | None:
        return next((t for t in self.tools.values() if t.server == server and t.name == tool), None)


@functools.cache
def mcp_installed() -> bool:
    """Whether the `mcp` extra (the official MCP SDK) can be imported."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        return False


def unconnected_servers(session: Session) -> list[str]:
    """The names of the MCP servers the client passed for `session` that are not connected
    because the `mcp` extra is missing (empty when it is installed)."""
    if session.mcp is not None or not session.mcp_servers or mcp_installed():
        return []
    return [
        str(s.get("name")) if isinstance(s, dict) else str(getattr(s, "name", "?"))
        for s in session.mcp_servers
    ]


def not_connected(names: list[str]) -> str:
    """What the user is told about servers left unconnected without the `mcp` extra."""
    listed = [f"`{name}`" for name in names]
    servers = " and ".join([", ".join(listed[:-1]), listed[-1]] if len(listed) > 1 else listed)
    plural = "s" if len(names) > 1 else ""
    return (
        f"The MCP server{plural} {servers} that the client passed {'are' if plural else 'is'} "
        "not connected: this agent was installed without the `mcp` extra. Install it "
        "(pip install 'acpstack[mcp]', or pip install '.[mcp]' from a checkout) and restart "
        "the agent."
    )


async def mcp_tools(session: Session) -> McpToolIndex:
    index = McpToolIndex()
    if session.mcp is None:
        index.unconnected = unconnected_servers(session)
        return index
    redactor = session_redactor(session)
    for tool in await session.mcp.list_tools():
        index.tools[function_name(tool.server, tool.name, index.tools)] = tool
    index.errors = {
        name: redactor.text(error.message) for name, error in session.mcp.errors.items()
    }
    return index


def function_name(server: str, tool: str, taken: dict[str, Any] | set[str]) -> str:
    """A name the chat-completions API accepts (`^[A-Za-z0-9_-]{1,64}$`), unique in `taken`."""
    name = f"mcp__{_NOT_ALLOWED.sub('_', server)}__{_NOT_ALLOWED.sub('_', tool)}"
    if len(name) <= MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()
    for length in range(8, len(digest) + 1):
        candidate = f"{name[: MAX_NAME - length - 1]}_{digest[:length]}"
        if candidate not in taken:
            return candidate
    raise ValueError(f"no free function name for {server}/{tool}")


def _definition(name: str, tool: McpTool) -> dict[str, Any]:
    schema = dict(tool.input_schema) if tool.input_schema else {}
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    description = f"[MCP server {tool.server}] {tool.description or tool.title or tool.name}"
    return {
        "type": "function",
        "function": {"name": name, "description": description[:1024], "parameters": schema},
    }


def session_redactor(session: Session) -> Redactor:
    """Masks the secrets of the session's MCP servers (secret-looking headers and environment
    variables, credentials in URLs) and anything credential-like in text."""
    secrets: list[str] = []
    for config in session.mcp.configs if session.mcp is not None else []:
        if isinstance(config, acp.McpServerStdio):
            secrets += [v.value for v in config.env if is_secret_name(v.name)]
        elif isinstance(config, acp.McpServerHttp | acp.McpServerSse):
            secrets += [h.value for h in config.headers if is_secret_name(h.name)]
            secrets += url_secrets(config.url)
        # (a server the client offers over ACP has no configuration secrets here)
    return Redactor(secrets)


async def run_mcp_tool(turn: Turn, tool: McpTool, arguments: dict[str, Any]) -> str:
    """Show the call, ask permission unless read-only, run it; returns what the model reads."""
    mcp = turn.session.mcp
    redactor = session_redactor(turn.session)
    title = f"{tool.server}: {tool.title or tool.name}"
    handle = await turn.start_tool(
        title, kind="read" if tool.read_only else "other", raw_input=arguments
    )
    if not tool.read_only:
        decision = await turn.request_permission(handle)
        if not decision.allowed:
            await handle.fail("The user did not approve this tool call.")
            return "The user refused this tool call; it did not run."
    if mcp is None:
        await handle.fail("The MCP server is not connected.")
        return "error: the MCP server is not connected"
    await handle.progress()
    try:
        result = await mcp.call_tool(tool.server, tool.name, arguments, timeout=CALL_TIMEOUT)
    except McpServerError as exc:
        message = redactor.text(exc.message)
        await handle.fail(message)
        return f"error: {message}"
    except asyncio.CancelledError:
        raise
    content = [_acp_content(item) for item in result.content]
    for_model = _text_for_model(result.content, result.structured)
    raw_output = {"structuredContent": result.structured} if result.structured is not None else None
    if result.is_error:
        await handle.fail(redactor.text(for_model) or "The tool reported an error.")
        return f"error: {for_model}"
    if raw_output is not None:
        await handle.complete(content=content, raw_output=raw_output)
    else:
        await handle.complete(content=content)
    return for_model


def _acp_content(item: dict[str, Any]) -> acp.Content:
    kind = item.get("type")
    if kind == "text":
        return text_content(str(item.get("text", "")))
    if (
        kind == "image"
        and isinstance(item.get("data"), str)
        and isinstance(item.get("mimeType"), str)
    ):
        return acp.Content(content=acp.ImageContent(data=item["data"], mime_type=item["mimeType"]))
    return text_content(_describe_item(item))


def _describe_item(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "resource":
        resource = item.get("resource") or {}
        if isinstance(resource.get("text"), str):
            return f'<resource uri="{resource.get("uri")}">\n{resource["text"]}\n</resource>'
        return f"[binary resource {resource.get('uri')} ({resource.get('mimeType') or 'unknown type'})]"
    if kind == "resource_link":
        return f"[resource link {item.get('name')} <{item.get('uri')}>]"
    return f"[{kind} ({item.get('mimeType') or 'no type'})]"


def _text_for_model(items: list[dict[str, Any]], structured: Any) -> str:
    parts = [
        str(item.get("text", "")) if item.get("type") == "text" else _describe_item(item)
        for item in items
    ]
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def describe_tools(index: McpToolIndex) -> str:
    """The `/tools` answer: every MCP tool by server, and the servers that failed."""
    if index.unconnected:
        return not_connected(index.unconnected)
    if not index.tools and not index.errors:
        return (
            "No MCP servers are connected to this session (a client passes them in `session/new`)."
        )
    lines = ["MCP tools (call one with `/mcp SERVER TOOL {json arguments}`):"]
    for tool in index.tools.values():
        note = " (read-only)" if tool.read_only else ""
        lines.append(
            f"- `{tool.server}` `{tool.name}`{note}: {tool.description or tool.title or ''}".rstrip(
                ": "
            )
        )
    for server, error in index.errors.items():
        lines.append(f"- server `{server}` is not available: {error}")
    return "\n".join(lines)
