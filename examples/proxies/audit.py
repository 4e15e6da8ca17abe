"""A proxy that appends every tool call, permission decision and command to a JSONL file.

AUDIT_FILE names the file (default: acp-audit.jsonl in the working directory).
"""

import json
import os
import time
from typing import Any

from acpstack.proxy import Proxy


class Audit(Proxy):
    name = "audit"

    def record(self, kind: str, **fields: Any) -> None:
        with open(os.environ.get("AUDIT_FILE", "acp-audit.jsonl"), "a", encoding="utf-8") as out:
            out.write(json.dumps({"time": time.time(), "kind": kind, **fields}) + "\n")

    async def update(self, params: dict[str, Any]) -> dict[str, Any]:
        change = params.get("update", {})
        if change.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            self.record(change["sessionUpdate"], session=params.get("sessionId"), call=change)
        return params

    async def permission(self, params: dict[str, Any], ask: Any) -> Any:
        decision = await ask(params)
        self.record("permission", request=params, decision=decision)
        return decision

    async def client_request(self, method: str, params: Any, forward: Any) -> Any:
        if method == "terminal/create":
            self.record("command", command=params.get("command"), args=params.get("args"))
        return await forward(params)


if __name__ == "__main__":
    Audit().run()
