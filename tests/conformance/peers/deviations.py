"""Known deviations of real agents (warnings, not failures): the legacy `models` field, an
`env_var` auth method, a custom notification without `_`, a string rawOutput."""

from typing import Any

from raw_agent import RawAgent, main


class Deviations(RawAgent):
    async def do_initialize(self, params: dict[str, Any]) -> Any:
        result = await super().do_initialize(params)
        result["authMethods"] = [{"id": "api-key", "name": "API key", "type": "env_var"}]
        return result

    async def do_session_new(self, params: dict[str, Any]) -> Any:
        result = await super().do_session_new(params)
        result["models"] = {"currentModelId": "m1", "availableModels": []}
        return result

    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        self.write({"jsonrpc": "2.0", "method": "agent/status", "params": {"busy": True}})
        call = {"toolCallId": "t1", "title": "ls", "kind": "execute", "status": "completed"}
        self.update(session_id, {"sessionUpdate": "tool_call", **call, "rawOutput": "file.txt"})
        return await super().turn(session_id, text, cancelled)


main(Deviations)
