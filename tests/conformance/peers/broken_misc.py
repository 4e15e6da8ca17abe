"""The raw agent wrong in one way (handshake, auth, cancellation, bad input):
`broken_misc.py MODE`.

- `no-agent-info` (weak): the initialize result has no agentInfo;
- `terminal-auth` (broken): offers a terminal auth method to a client that did not ask;
- `needless-auth` (weak): session/new demands authentication (-32000) with no authMethods;
- `lenient-auth` (weak): advertises an auth method, and authenticate accepts any method id;
- `permission-ignores-cancel` (broken): a permission request answered `cancelled` does not
  end the turn: it goes on and ends end_turn;
- `lenient-params` (weak): session/new accepts a cwd that is not a string;
- `internal-params` (weak): invalid params are refused with -32603 instead of -32602;
- `small-lines` (weak): reads lines of at most 64 KiB, and dies on a longer one;
- `drops-long-lines` (weak): drops lines over 1 MiB without an answer;
- `answers-responses` (weak): answers a response it does not know with an error;
- `strict-fields` (broken): refuses unknown fields in session/new with -32602.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from raw_agent import RawAgent, RequestFailed, main

MODE = sys.argv[1] if len(sys.argv) > 1 else "no-agent-info"
KNOWN_NEW_FIELDS = {"cwd", "mcpServers", "additionalDirectories"}


class BrokenMisc(RawAgent):
    async def do_initialize(self, params: dict[str, Any]) -> Any:
        result = await super().do_initialize(params)
        if MODE == "no-agent-info":
            del result["agentInfo"]
        elif MODE == "terminal-auth":
            login = {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}
            result["authMethods"] = [login]
        elif MODE == "lenient-auth":
            result["authMethods"] = [{"id": "key", "name": "API key"}]
        return result

    async def do_authenticate(self, params: dict[str, Any]) -> Any:
        return {}

    async def do_session_new(self, params: dict[str, Any]) -> Any:
        if MODE == "needless-auth":
            raise RequestFailed(-32000, "authentication required")
        if MODE == "lenient-params" and not isinstance(params.get("cwd"), str):
            params = {**params, "cwd": "/", "mcpServers": []}
        if MODE == "internal-params" and not isinstance(params.get("cwd"), str):
            raise RequestFailed(-32603, "internal error")
        if MODE == "strict-fields" and set(params) - KNOWN_NEW_FIELDS:
            raise RequestFailed(-32602, f"unknown fields: {sorted(set(params) - KNOWN_NEW_FIELDS)}")
        return await super().do_session_new(params)

    async def do_session_prompt(self, params: dict[str, Any]) -> Any:
        if MODE == "internal-params" and not isinstance(params.get("prompt"), list):
            raise RequestFailed(-32603, "internal error")
        return await super().do_session_prompt(params)

    async def turn(self, session_id: str, text: str, cancelled: asyncio.Event) -> Any:
        if MODE == "permission-ignores-cancel" and text == "permission":
            call = {"toolCallId": "call-1", "title": "Edit", "kind": "edit", "status": "pending"}
            self.update(session_id, {"sessionUpdate": "tool_call", **call})
            params = {"sessionId": session_id, "toolCall": call, "options": PERMISSION_OPTIONS}
            await self.call("session/request_permission", params)
            self.chunk(session_id, "went on anyway")  # whatever the outcome
            return {"stopReason": "end_turn"}
        return await super().turn(session_id, text, cancelled)

    def on_line(self, line: bytes) -> None:
        if MODE == "drops-long-lines" and len(line) > 1024 * 1024:
            return
        if MODE == "answers-responses":
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if (
                isinstance(message, dict)
                and "method" not in message
                and message.get("id") not in self.waiting
            ):
                self.error(message.get("id"), -32600, "a response to nothing")
                return
        super().on_line(line)


async def serve_small_lines(agent: RawAgent) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()  # the default limit: 64 KiB
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():  # raises on a longer line: the agent dies
        agent.on_line(line)


PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]

if MODE == "small-lines":
    asyncio.run(serve_small_lines(BrokenMisc()))
else:
    main(BrokenMisc)
