"""A small, correct ACP agent on raw stdio (standard library only, no acpstack), written
for the checker's tests. Each deliberately broken agent in this folder subclasses it and
overrides the one behaviour it gets wrong.

Prompts: `wait` sends a chunk, then waits for session/cancel (-> cancelled) or
$/cancel_request (-> error -32800); `permission` asks for permission first; anything else
is echoed as `echo: TEXT` (-> end_turn).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from typing import Any

PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


class RequestFailed(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class RawAgent:
    def __init__(self) -> None:
        self.initialized = False
        self.sessions: dict[str, str] = {}
        self.cancels: dict[str, asyncio.Event] = {}
        self.running: dict[Any, asyncio.Task[None]] = {}
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 0
        self.client_caps: dict[str, Any] = {}

    # -- wire ---------------------------------------------------------------------

    def write(self, message: Any) -> None:
        sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
        sys.stdout.buffer.flush()

    def reply(self, rid: Any, result: Any) -> None:
        self.write({"jsonrpc": "2.0", "id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.write({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        params = {"sessionId": session_id, "update": update}
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def chunk(self, session_id: str, text: str) -> None:
        content = {"type": "text", "text": text}
        self.update(session_id, {"sessionUpdate": "agent_message_chunk", "content": content})

    async def call(self, method: str, params: Any) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await future

    # -- dispatch -----------------------------------------------------------------

    def on_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.on_invalid_json(line)
            return
        if not isinstance(message, dict):
            self.error(None, -32600, "not a JSON-RPC message")
            return
        if message.get("jsonrpc") != "2.0":
            self.error(message.get("id"), -32600, 'jsonrpc must be "2.0"')
            return
        method = message.get("method")
        if method is None:
            future = self.waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if "id" not in message:
            self.on_notification(method, params)
            return
        task = asyncio.get_running_loop().create_task(self.handle(message["id"], method, params))
        self.running[message["id"]] = task

    def on_invalid_json(self, line: bytes) -> None:
        self.error(None, -32700, "parse error")

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel" and params.get("sessionId") in self.cancels:
            self.cancels[params["sessionId"]].set()
        elif method == "$/cancel_request":
            task = self.running.get(params.get("requestId"))
            if task is not None and not task.done():
                task.cancel()

    async def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        try:
            if method != "initialize" and not self.initialized:
                raise RequestFailed(-32600, "initialize first")
            handler = getattr(self, "do_" + method.replace("/", "_"), None)
            if handler is None or method.startswith("_"):
                raise RequestFailed(-32601, f"method not found: {method}")
            self.reply(rid, await handler(params))
        except RequestFailed as exc:
            self.error(rid, exc.code, str(exc))
        except asyncio.CancelledError:
            self.error(rid, -32800, "request cancelled")
        finally:
            self.running.pop(rid, None)

    async def on_eof(self) -> None:
        for task in list(self.running.values()):
            task.cancel()

    # -- methods ------------------------------------------------------------------

    async def do_initialize(self, params: dict[str, Any]) -> Any:
        self.initialized = True
        self.client_caps = params.get("clientCapabilities") or {}
        version = params.get("protocolVersion")
        return {
            "protocolVersion": min(version, 1) if isinstance(version, int) else 1,
            "agentCapabilities": {"loadSession": False},
            "authMethods": [],
            "agentInfo": {"name": "raw-test-agent", "version": "1.0"},
        }

    async def do_session_new(self, params: dict[str, Any]) -> Any:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RequestFailed(-32602, "cwd must be an absolute path")
        if not isinstance(params.get("mcpServers"), list):
            raise RequestFailed(-32602, "mcpServers must be a list")
        session_id = self.new_session_id()
        self.sessions[session_id] = cwd
        self.cancels[session_id] = asyncio.Event()
        return {"sessionId": session_id}

    def new_session_id(self) -> str:
        return uuid.uuid4().hex

    async def do_session_prompt(self, params: dict[str, Any]) -> Any:
        session_id = params.get("sessionId")
        if session_id not in self.sessions:
            raise RequestFailed(-32002, f"unknown session {session_id}")
        prompt = params.get("prompt")
        if not isinstance(prompt, list) or not all(isinstance(b, dict) for b in prompt):
            raise RequestFailed(-32602, "prompt must be a list of content blocks")
        text = " ".join(b.get("text", "") for b in prompt if b.get("type") == "text").strip()
        cancelled = self.cancels[session_id]
        cancelled.clear()
        return await self.turn(session_id, text, cancelled)

    async def turn(self, session_id: str, text: str, cancelled: asyncio.Event) -> Any:
        if text == "wait":
            self.chunk(session_id, "waiting")
            await cancelled.wait()
            return {"stopReason": "cancelled"}
        if text == "permission":
            call = {
                "toolCallId": "call-1",
                "title": "Edit a file",
                "kind": "edit",
                "status": "pending",
            }
            self.update(session_id, {"sessionUpdate": "tool_call", **call})
            answer = await self.call(
                "session/request_permission",
                {"sessionId": session_id, "toolCall": call, "options": PERMISSION_OPTIONS},
            )
            outcome = (answer.get("result") or {}).get("outcome") or {}
            if outcome.get("outcome") == "cancelled" or cancelled.is_set():
                return {"stopReason": "cancelled"}
        self.chunk(session_id, f"echo: {text}")
        return {"stopReason": "end_turn"}


async def serve(agent: RawAgent) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break  # EOF: the client is gone
        if line.strip():
            agent.on_line(line)
    await agent.on_eof()


def main(agent_class: type[RawAgent] = RawAgent) -> None:
    asyncio.run(serve(agent_class()))


if __name__ == "__main__":
    main()
