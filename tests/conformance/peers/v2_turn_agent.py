"""The raw agent speaking protocol v2 (and 1), for the v2 conversation cases:
`v2_turn_agent.py MODE`.

On v2, `session/prompt` is answered at once with `{messageId}`; the turn echoes the user's
message, reports `state_update` running, says `echo: TEXT` (or, for the prompt `wait`,
waits for session/cancel) and ends with `state_update` idle and the stop reason.

- `correct`: as above;
- `no-idle` (broken): the turn never reports idle;
- `no-stop-reason` (weak): the idle update carries no stopReason;
- `late` (broken): a message chunk after the idle;
- `ignores-cancel` (broken): session/cancel ends the turn with stopReason end_turn;
- `bad-ack` (broken): the acknowledgement has no `messageId` (it says `id`);
- `no-running` (broken): the turn reports no running state before its idle;
- `no-echo` (broken): the user's message is not echoed as a `user_message` update;
- `stranger` (broken): the turn also sends an update for a session nobody opened;
- `bad-session-new` (broken): v2's session/new is answered with a sessionId that is not
  a string;
- `dies-once` (broken): the second v2 `initialize` (counted across processes in the file
  named by the second argument) kills the agent; the others are answered.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

from raw_agent import RawAgent, RequestFailed, main

MODE = sys.argv[1] if len(sys.argv) > 1 else "correct"
INFO = {"name": "v2-turn-test-agent", "version": "1.0"}


class V2TurnAgent(RawAgent):
    version = 1
    turns: set[asyncio.Task[None]] = set()

    async def do_initialize(self, params: dict[str, Any]) -> Any:
        if params.get("protocolVersion") != 2:
            return await super().do_initialize(params)
        if MODE == "dies-once":
            with open(sys.argv[2], "a+") as count:
                count.write("v2\n")
                count.seek(0)
                if len(count.read().split()) == 2:
                    os._exit(3)
        self.initialized = True
        self.version = 2
        return {"protocolVersion": 2, "info": INFO, "capabilities": {}}

    async def do_session_new(self, params: dict[str, Any]) -> Any:
        result = await super().do_session_new(params)
        if MODE == "bad-session-new" and self.version == 2:
            return {**result, "sessionId": 7}
        return result

    async def do_session_prompt(self, params: dict[str, Any]) -> Any:
        if self.version == 1:
            return await super().do_session_prompt(params)
        session_id = params.get("sessionId")
        if session_id not in self.sessions:
            raise RequestFailed(-32002, f"unknown session {session_id}")
        prompt = params.get("prompt") if isinstance(params.get("prompt"), list) else []
        text = " ".join(b.get("text", "") for b in prompt if b.get("type") == "text").strip()
        message_id = uuid.uuid4().hex
        if MODE != "no-echo":
            self.update(
                session_id,
                {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt},
            )
        if MODE != "no-running":
            self.state(session_id, "running")
        self.cancels[session_id].clear()
        # the task starts after this answer is written: the turn goes on after it
        task = asyncio.get_running_loop().create_task(self.v2_turn(session_id, text))
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)
        return {"id": message_id} if MODE == "bad-ack" else {"messageId": message_id}

    async def v2_turn(self, session_id: str, text: str) -> None:
        stop = "end_turn"
        if text == "wait":
            self.v2_chunk(session_id, "waiting")
            await self.cancels[session_id].wait()
            stop = "end_turn" if MODE == "ignores-cancel" else "cancelled"
        else:
            self.v2_chunk(session_id, f"echo: {text}")
        if MODE == "stranger":
            self.v2_chunk("no-such-session", "for nobody")
        if MODE == "no-idle":
            return
        if MODE == "no-stop-reason":
            self.state(session_id, "idle")
        else:
            self.state(session_id, "idle", stopReason=stop)
        if MODE == "late":
            self.v2_chunk(session_id, "one more thing")

    def state(self, session_id: str, state: str, **extra: Any) -> None:
        self.update(session_id, {"sessionUpdate": "state_update", "state": state, **extra})

    def v2_chunk(self, session_id: str, text: str) -> None:
        content = {"type": "text", "text": text}
        update = {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": content}
        self.update(session_id, update)


main(V2TurnAgent)
