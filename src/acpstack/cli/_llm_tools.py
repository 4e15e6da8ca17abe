"""The model's tools: the built-in ones, which act through the client, and the session's MCP tools.

Built-in tools read and write files with `fs/*` (edits shown as diffs, after permission)
and run commands in client terminals (after permission), so the client stays the user's
guard. For a client that offers no file access or no terminals, the `Turn` helpers do that
work in the agent's process inside the session's roots, after the same permission; a
command's output is then shown in its tool call as text. `list_files` and `search_files`
run `ls`/`grep` without asking, so their path must resolve (symlinks and `..` included)
inside the session's cwd or additional directories, as for the agent's own file reads;
anything else fails the tool call and nothing runs. MCP tools are described in
`_mcp_tools`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from typing import Any

from acpstack.agent import ClientCapabilityMissing, Turn, diff_content, text_content
from acpstack.cli._mcp_tools import McpToolIndex, run_mcp_tool
from acpstack.local import Workspace
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

PLAN_STATUSES: dict[str, acp.PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}
log = logging.getLogger("acpstack.llm")

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "line": {"type": "integer", "description": "1-based first line"},
                    "limit": {"type": "integer", "description": "number of lines"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create or overwrite a file (the user approves it).",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace the first occurrence of old_text with new_text in a file (the user approves it).",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"},
                },
                "required": ["path", "old_text", "new_text"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_command",
            "description": "Run a command in a terminal (the user approves it).",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "timeout": {"type": "number", "description": "seconds, default 120"},
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List a directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_files",
            "description": "Search file contents for a regular expression (grep -rn).",
            "parameters": {
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
                "required": ["pattern"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "update_plan",
            "description": "Show your plan to the user (the whole list each time).",
            "parameters": {
                "type": "object",
                "properties": {
                    "entries": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string"},
                                "status": {
                                    "type": "string",
                                    "enum": ["pending", "in_progress", "completed"],
                                },
                            },
                            "required": ["content", "status"],
                        },
                    }
                },
                "required": ["entries"],
            },
        },
    },
]

BUILTIN_NAMES = frozenset(t["function"]["name"] for t in TOOLS)


def inside_roots(turn: Turn, path: str) -> str:
    """The real path of `path` if it exists inside the session's roots (its cwd and
    additional directories), resolved as the agent's own file reads resolve it (`..` and
    every symlink); else `RequestError` (-32005 outside the roots, -32002 not found)."""
    session = turn.session
    return str(Workspace(session.cwd, session.additional_directories).check(path, must_exist=True))


class Toolbox:
    """What the model may call in one turn: the built-in tools and the session's MCP tools."""

    def __init__(
        self, mcp: McpToolIndex | None = None, *, redact: Callable[[str], str] | None = None
    ) -> None:
        self.mcp = mcp or McpToolIndex()
        # Masks the agent's secrets in command output (shown, stored, sent to the model).
        self.redact = redact
        self.definitions: list[dict[str, Any]] = [*TOOLS, *self.mcp.definitions()]

    async def run(self, turn: Turn, call: dict[str, Any]) -> str:
        """Run one tool call; any failure becomes an error text for the model, never the turn's end."""
        name = call["function"]["name"]
        try:
            args = json.loads(call["function"]["arguments"] or "{}")
        except json.JSONDecodeError:
            return f"error: the arguments of {name} are not valid JSON"
        if not isinstance(args, dict):
            return f"error: the arguments of {name} must be a JSON object"
        mcp_tool = self.mcp.tools.get(name)
        handler = getattr(self, f"_tool_{name}", None) if name in BUILTIN_NAMES else None
        try:
            if mcp_tool is not None:
                return await run_mcp_tool(turn, mcp_tool, args)
            if handler is None:
                return f"error: unknown tool {name}"
            result: str = await handler(turn, args)
            return result
        except asyncio.CancelledError:
            raise
        except (RequestError, ClientCapabilityMissing) as err:
            return f"error: {err.message}"
        except Exception as exc:  # a bad tool argument must not end the turn
            log.warning("tool %s failed: %s", name, exc)
            return f"error: {exc}"

    def _path(self, turn: Turn, path: str) -> str:
        return (
            path if os.path.isabs(path) else os.path.normpath(os.path.join(turn.session.cwd, path))
        )

    async def _tool_read_file(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args["path"])
        tool = await turn.start_tool(
            f"Read {args['path']}", kind="read", locations=[path], raw_input=args
        )
        try:
            content = await turn.read_file(
                path, line=args.get("line"), limit=args.get("limit"), tool=tool
            )
        except RequestError as err:
            await tool.fail(err.message)
            raise
        await tool.complete(content=[text_content(content[:4000])])
        return content

    async def _write(
        self, turn: Turn, shown: str, path: str, old: str | None, new: str, args: dict[str, Any]
    ) -> str:
        tool = await turn.start_tool(
            shown,
            kind="edit",
            locations=[path],
            content=[diff_content(path, old, new)],
            raw_input=args,
        )
        decision = await turn.request_permission(tool)
        if not decision.allowed:
            await tool.fail("The user did not approve this edit.")
            return "The user refused this edit; the file was not changed."
        try:
            await turn.write_file(path, new, tool=tool)
        except RequestError as err:
            await tool.fail(err.message)
            raise
        await tool.complete(content=[diff_content(path, old, new)])
        return f"{path} written."

    async def _tool_write_file(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args["path"])
        try:
            old: str | None = await turn.read_file(path)
        except RequestError:
            old = None
        return await self._write(turn, f"Write {args['path']}", path, old, args["content"], args)

    async def _tool_edit_file(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args["path"])
        old = await turn.read_file(path)
        if args["old_text"] not in old:
            return f"error: old_text does not occur in {args['path']}"
        return await self._write(
            turn,
            f"Edit {args['path']}",
            path,
            old,
            old.replace(args["old_text"], args["new_text"], 1),
            args,
        )

    async def _tool_run_command(self, turn: Turn, args: dict[str, Any]) -> str:
        command, cmd_args = args["command"], list(args.get("args") or [])
        shown = " ".join([command, *cmd_args])
        tool = await turn.start_tool(f"Run `{shown}`", kind="execute", raw_input=args)
        decision = await turn.request_permission(tool)
        if not decision.allowed:
            await tool.fail("The user did not approve this command.")
            return "The user refused to run this command."
        try:
            result = await turn.run_command(
                command,
                cmd_args,
                cwd=turn.session.cwd,
                timeout=float(args.get("timeout") or 120),
                output_byte_limit=64_000,
                tool=tool,
                redact=self.redact,
            )
        except RequestError as err:
            await tool.fail(err.message)
            raise
        status = (
            f"exit code {result.exit_code}"
            if result.exit_code is not None
            else f"killed by {result.signal}"
        )
        if result.timed_out:
            status += " (timed out)"
        if result.cancelled:
            status = "cancelled by the user before it finished"
        if result.exit_code == 0:
            await tool.complete(raw_output={"exitCode": 0})
        else:
            await tool.fail(raw_output={"exitCode": result.exit_code, "signal": result.signal})
        return f"{status}\n{result.output}"

    async def _read_only_command(self, turn: Turn, title: str, argv: list[str]) -> str:
        """Run a read-only command (no permission asked) on the path it ends with, which must
        lie inside the session's roots: a path outside them fails the tool call, and nothing
        runs (whether the client's terminal or the agent would have run it)."""
        tool = await turn.start_tool(title, kind="search", raw_input={"command": list(argv)})
        try:
            argv[-1] = inside_roots(turn, argv[-1])
            result = await turn.run_command(
                argv[0],
                argv[1:],
                cwd=turn.session.cwd,
                timeout=60,
                output_byte_limit=64_000,
                tool=tool,
                redact=self.redact,
            )
        except RequestError as err:
            await tool.fail(err.message)
            raise
        await tool.complete(content=[text_content(result.output[-4000:])])
        return result.output

    async def _tool_list_files(self, turn: Turn, args: dict[str, Any]) -> str:
        shown = args.get("path") or "."
        path = self._path(turn, shown)
        return await self._read_only_command(turn, f"List {shown}", ["ls", "-la", "--", path])

    async def _tool_search_files(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args.get("path") or ".")
        # -e and --: a pattern or a path that starts with "-" is never read as an option.
        argv = ["grep", "-rn", "-e", str(args["pattern"]), "--", path]
        return await self._read_only_command(turn, f"Search {args['pattern']!r}", argv)

    async def _tool_update_plan(self, turn: Turn, args: dict[str, Any]) -> str:
        # A status the model made up shows as pending (the wire only knows these three).
        entries = [
            (str(e["content"]), PLAN_STATUSES.get(str(e.get("status")), "pending"))
            for e in args.get("entries", [])
        ]
        await turn.plan(entries)
        return "plan shown to the user"
