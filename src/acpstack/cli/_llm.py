"""An OpenAI-compatible chat-completions brain: a real coding-agent loop over ACP.

Works with any server speaking the chat-completions API with streaming and tool calls
(OpenAI, Ollama, vLLM, llama.cpp server). The model's tools act through the client:
files are read and written with `fs/*` (edits shown as diffs, after permission), commands
run in client terminals (after permission), so the client stays the user's guard.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any

from acpstack.agent import Turn, diff_content, text_content
from acpstack.wire import RequestError

log = logging.getLogger("acpstack.llm")

SYSTEM_PROMPT = (
    "You are a coding agent working in the user's project at {cwd}. Use the tools to read, "
    "search and edit files and to run commands; paths may be relative to that directory. "
    "Make a plan with update_plan for multi-step work. Be concise."
)

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a text file.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer", "description": "1-based first line"},
                                         "limit": {"type": "integer", "description": "number of lines"}}, "required": ["path"]}}},
    {"type": "function", "function": {"name": "write_file", "description": "Create or overwrite a file (the user approves it).", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}},
    {"type": "function", "function": {"name": "edit_file", "description": "Replace the first occurrence of old_text with new_text in a file (the user approves it).", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
        "required": ["path", "old_text", "new_text"]}}},
    {"type": "function", "function": {"name": "run_command", "description": "Run a command in a terminal (the user approves it).", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}, "args": {"type": "array", "items": {"type": "string"}},
                                         "timeout": {"type": "number", "description": "seconds, default 120"}}, "required": ["command"]}}},
    {"type": "function", "function": {"name": "list_files", "description": "List a directory.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "search_files", "description": "Search file contents for a regular expression (grep -rn).", "parameters": {
        "type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}, "required": ["pattern"]}}},
    {"type": "function", "function": {"name": "update_plan", "description": "Show your plan to the user (the whole list each time).", "parameters": {
        "type": "object", "properties": {"entries": {"type": "array", "items": {"type": "object", "properties": {
            "content": {"type": "string"}, "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}},
            "required": ["content", "status"]}}}, "required": ["entries"]}}},
]

FINISH_TO_STOP = {"length": "max_tokens", "content_filter": "refusal"}


class LlmError(Exception):
    pass


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise ImportError('The LLM backend needs httpx: pip install "acpstack[llm]"') from exc
    return httpx


class LlmBrain:
    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        system_prompt: str | None = None,
        max_tool_rounds: int = 20,
        request_timeout: float = 120.0,
        context_window: int = 128_000,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.max_tool_rounds = max_tool_rounds
        self.request_timeout = request_timeout
        self.context_window = context_window

    def __repr__(self) -> str:  # never show the key
        return f"LlmBrain(model={self.model!r}, base_url={self.base_url!r})"

    async def respond(self, turn: Turn) -> str:
        history: list[dict[str, Any]] = turn.session.state.setdefault("llm_history", [])
        if not history:
            history.append({"role": "system", "content": self.system_prompt.format(cwd=turn.session.cwd)})
        history.append({"role": "user", "content": turn.text})
        for _ in range(self.max_tool_rounds):
            try:
                message, finish = await self._complete(turn, history)
            except LlmError as exc:
                await turn.say(f"\n**The model could not answer:** {exc}")
                return "end_turn"
            history.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return FINISH_TO_STOP.get(finish or "", "end_turn")
            for call in calls:
                result = await self._run_tool(turn, call)
                history.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return "max_turn_requests"

    # -- one streamed completion ----------------------------------------------------------

    async def _complete(self, turn: Turn, history: list[dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
        httpx = _httpx()
        body = {"model": self.model, "messages": history, "tools": TOOLS, "stream": True, "stream_options": {"include_usage": True}}
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        async with httpx.AsyncClient(timeout=self.request_timeout) as http:
            try:
                async with http.stream("POST", f"{self.base_url}/chat/completions", json=body, headers=headers) as response:
                    if response.status_code >= 400:
                        detail = (await response.aread()).decode("utf-8", "replace")[:300]
                        raise LlmError(f"HTTP {response.status_code} from {self.base_url}: {_redact(detail, self._api_key)}")
                    async for line in response.aiter_lines():
                        if not line.startswith("data:"):
                            continue
                        data = line[5:].strip()
                        if data == "[DONE]":
                            break
                        chunk = json.loads(data)
                        finish = await self._apply_chunk(turn, chunk, text, calls) or finish
            except httpx.HTTPError as exc:
                raise LlmError(f"{type(exc).__name__} talking to {self.base_url}") from None
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return message, finish

    async def _apply_chunk(self, turn: Turn, chunk: dict[str, Any], text: list[str], calls: dict[int, dict[str, Any]]) -> str | None:
        usage = chunk.get("usage")
        if isinstance(usage, dict) and "prompt_tokens" in usage:
            used = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
            await turn.usage(used, self.context_window)
        finish = None
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                await turn.think(reasoning)
            if delta.get("content"):
                text.append(delta["content"])
                await turn.say(delta["content"])
            for fragment in delta.get("tool_calls") or []:
                slot = calls.setdefault(fragment.get("index", 0), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                slot["id"] = fragment.get("id") or slot["id"]
                function = fragment.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
        return finish

    # -- tools --------------------------------------------------------------------------

    def _path(self, turn: Turn, path: str) -> str:
        return path if os.path.isabs(path) else os.path.normpath(os.path.join(turn.session.cwd, path))

    async def _run_tool(self, turn: Turn, call: dict[str, Any]) -> str:
        name = call["function"]["name"]
        try:
            args = json.loads(call["function"]["arguments"] or "{}")
        except json.JSONDecodeError:
            return f"error: the arguments of {name} are not valid JSON"
        handler = getattr(self, f"_tool_{name}", None)
        if handler is None:
            return f"error: unknown tool {name}"
        try:
            result: str = await handler(turn, args)
            return result
        except asyncio.CancelledError:
            raise
        except RequestError as err:
            return f"error: {err.message}"
        except Exception as exc:  # a bad tool argument must not end the turn
            log.warning("tool %s failed: %s", name, exc)
            return f"error: {exc}"

    async def _tool_read_file(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args["path"])
        tool = await turn.start_tool(f"Read {args['path']}", kind="read", locations=[path], raw_input=args)
        try:
            content = await turn.read_file(path, line=args.get("line"), limit=args.get("limit"))
        except RequestError as err:
            await tool.fail(err.message)
            raise
        await tool.complete(content=[text_content(content[:4000])])
        return content

    async def _write(self, turn: Turn, shown: str, path: str, old: str | None, new: str, args: dict[str, Any]) -> str:
        tool = await turn.start_tool(shown, kind="edit", locations=[path], content=[diff_content(path, old, new)], raw_input=args)
        decision = await turn.request_permission(tool)
        if not decision.allowed:
            await tool.fail("The user did not approve this edit.")
            return "The user refused this edit; the file was not changed."
        await turn.write_file(path, new)
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
        return await self._write(turn, f"Edit {args['path']}", path, old, old.replace(args["old_text"], args["new_text"], 1), args)

    async def _tool_run_command(self, turn: Turn, args: dict[str, Any]) -> str:
        command, cmd_args = args["command"], list(args.get("args") or [])
        shown = " ".join([command, *cmd_args])
        tool = await turn.start_tool(f"Run `{shown}`", kind="execute", raw_input=args)
        decision = await turn.request_permission(tool)
        if not decision.allowed:
            await tool.fail("The user did not approve this command.")
            return "The user refused to run this command."
        result = await turn.run_command(command, cmd_args, cwd=turn.session.cwd, timeout=float(args.get("timeout") or 120),
                                        output_byte_limit=64_000, tool=tool)
        status = f"exit code {result.exit_code}" if result.exit_code is not None else f"killed by {result.signal}"
        if result.timed_out:
            status += " (timed out)"
        if result.exit_code == 0:
            await tool.complete(raw_output={"exitCode": 0})
        else:
            await tool.fail(raw_output={"exitCode": result.exit_code, "signal": result.signal})
        return f"{status}\n{result.output}"

    async def _read_only_command(self, turn: Turn, title: str, argv: list[str]) -> str:
        tool = await turn.start_tool(title, kind="search", raw_input={"command": argv})
        result = await turn.run_command(argv[0], argv[1:], cwd=turn.session.cwd, timeout=60, output_byte_limit=64_000, tool=tool)
        await tool.complete(content=[text_content(result.output[-4000:])])
        return result.output

    async def _tool_list_files(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args.get("path") or ".")
        return await self._read_only_command(turn, f"List {args.get('path') or '.'}", ["ls", "-la", path])

    async def _tool_search_files(self, turn: Turn, args: dict[str, Any]) -> str:
        path = self._path(turn, args.get("path") or ".")
        return await self._read_only_command(turn, f"Search {args['pattern']!r}", ["grep", "-rn", "--", args["pattern"], path])

    async def _tool_update_plan(self, turn: Turn, args: dict[str, Any]) -> str:
        entries = [(str(e["content"]), str(e.get("status", "pending"))) for e in args.get("entries", [])]
        await turn.plan(entries)
        return "plan shown to the user"


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "[redacted]") if secret else text
