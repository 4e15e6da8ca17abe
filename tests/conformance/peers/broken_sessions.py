"""The raw agent with every optional session method (load, list, resume, close, delete),
modes and a config option, correct or wrong in one way: `broken_sessions.py MODE`.

- `correct`: as the session cases expect;
- `no-session-id` (broken): session/new answers no sessionId;
- `relative-cwd` (weak): session/new accepts a relative cwd;
- `any-session` (allowed, a MAY): a prompt for a session nobody opened is answered end_turn;
- `bad-mode` (weak): currentModeId is not among the availableModes;
- `refuses-mode` (allowed): refuses to switch to the advertised mode `code` (as an agent
  may in a folder it does not trust);
- `bad-config` (weak): set_config_option answers the old value;
- `bad-list` (weak): session/list answers without a `sessions` array;
- `late-load` (broken): session/load answers first, then replays the history;
- `empty-load` (weak): session/load replays nothing;
- `resume-replays` (broken): session/resume replays the history;
- `bad-close` (weak): session/close fails although advertised;
- `delete-once` (weak): deleting a session that is gone fails.
"""

from __future__ import annotations

import sys
from typing import Any

from raw_agent import RawAgent, RequestFailed, main

MODE = sys.argv[1] if len(sys.argv) > 1 else "correct"
MODES = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]


class BrokenSessions(RawAgent):
    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.values: dict[str, str] = {}

    async def do_initialize(self, params: dict[str, Any]) -> Any:
        result = await super().do_initialize(params)
        every = {"list": {}, "resume": {}, "close": {}, "delete": {}}
        result["agentCapabilities"] = {"loadSession": True, "sessionCapabilities": every}
        return result

    def unknown(self, params: dict[str, Any]) -> str:
        session_id = params.get("sessionId")
        if session_id not in self.sessions:
            raise RequestFailed(-32002, f"unknown session {session_id}")
        return str(session_id)

    async def do_session_new(self, params: dict[str, Any]) -> Any:
        if MODE == "relative-cwd":
            params = {**params, "cwd": "/" + str(params.get("cwd"))}
        result = await super().do_session_new(params)
        session_id = result["sessionId"]
        self.history[session_id] = []
        self.values[session_id] = "ask"
        current = "plan" if MODE == "bad-mode" else "ask"
        result["modes"] = {"currentModeId": current, "availableModes": MODES}
        result["configOptions"] = self.options(session_id)
        if MODE == "no-session-id":
            del result["sessionId"]
        return result

    def options(self, session_id: str) -> list[dict[str, Any]]:
        values = [{"value": m["id"], "name": m["name"]} for m in MODES]
        option = {"id": "mode", "name": "Mode", "type": "select", "options": values}
        return [{**option, "currentValue": self.values[session_id]}]

    async def do_session_set_mode(self, params: dict[str, Any]) -> Any:
        self.unknown(params)
        if params.get("modeId") not in [m["id"] for m in MODES]:
            raise RequestFailed(-32602, "unknown mode")
        if MODE == "refuses-mode" and params.get("modeId") == "code":
            raise RequestFailed(-32000, "the folder is not trusted: no code mode")
        return {}

    async def do_session_set_config_option(self, params: dict[str, Any]) -> Any:
        session_id = self.unknown(params)
        if MODE != "bad-config":
            self.values[session_id] = str(params.get("value"))
        return {"configOptions": self.options(session_id)}

    async def do_session_prompt(self, params: dict[str, Any]) -> Any:
        if MODE == "any-session" and params.get("sessionId") not in self.sessions:
            return {"stopReason": "end_turn"}
        return await super().do_session_prompt(params)

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        super().update(session_id, update)
        if update.get("sessionUpdate") == "agent_message_chunk":
            self.history.setdefault(session_id, []).append(update)

    async def do_session_list(self, params: dict[str, Any]) -> Any:
        if params.get("cursor") is not None:
            raise RequestFailed(-32602, "unknown cursor")
        sessions = [{"sessionId": s, "cwd": cwd} for s, cwd in self.sessions.items()]
        return {"items": sessions} if MODE == "bad-list" else {"sessions": sessions}

    def replay(self, session_id: str) -> None:
        for update in self.history[session_id] if MODE != "empty-load" else []:
            super().update(session_id, update)

    async def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if (
            method == "session/load"
            and MODE == "late-load"
            and params.get("sessionId") in self.sessions
        ):
            self.reply(rid, {})
            self.replay(str(params["sessionId"]))
            return
        await super().handle(rid, method, params)

    async def do_session_load(self, params: dict[str, Any]) -> Any:
        self.replay(self.unknown(params))
        return {}

    async def do_session_resume(self, params: dict[str, Any]) -> Any:
        session_id = self.unknown(params)
        if MODE == "resume-replays":
            self.replay(session_id)
        return {}

    async def do_session_close(self, params: dict[str, Any]) -> Any:
        self.unknown(params)
        if MODE == "bad-close":
            raise RequestFailed(-32603, "cannot close")
        return {}

    async def do_session_delete(self, params: dict[str, Any]) -> Any:
        session_id = params.get("sessionId")
        if session_id not in self.sessions and MODE == "delete-once":
            raise RequestFailed(-32002, f"unknown session {session_id}")
        self.sessions.pop(str(session_id), None)
        return {}


main(BrokenSessions)
