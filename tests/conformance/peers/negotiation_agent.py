"""The raw agent with another answer to `initialize`, for the version negotiation cases:
`negotiation_agent.py MODE`.

- `v2-only` (correct): speaks only protocol v2: 2 in v2's shape for a request of 2 or
  more, -32022 {requested, supported: [2]} below that;
- `no-data` (broken): v2-only, but its -32022 carries no data;
- `lying` (broken): -32022 {requested, supported: [1, 2]} to every request, although it
  lists versions at or below the one requested;
- `wrong-requested` (broken): v2-only, but its -32022 names another requested version;
- `newer-to-v1` (doubtful): answers 2 (in v2's shape) to every request, 1 included;
- `v2-in-v1-shape` (broken): answers 2 to a request for 2, in v1's shape (no `info`).
"""

from __future__ import annotations

import sys
from typing import Any

from raw_agent import RawAgent, main

INFO = {"name": "negotiation-test-agent", "version": "1.0"}
MODE = sys.argv[1] if len(sys.argv) > 1 else "v2-only"


class NegotiationAgent(RawAgent):
    async def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method != "initialize":
            await super().handle(rid, method, params)
            return
        requested = params.get("protocolVersion")
        answer = self.negotiate(requested if isinstance(requested, int) else 0)
        if "code" in answer:
            self.write({"jsonrpc": "2.0", "id": rid, "error": answer})
            return
        self.initialized = True
        self.reply(rid, answer)

    def negotiate(self, requested: int) -> dict[str, Any]:
        v2 = {"protocolVersion": 2, "info": INFO, "capabilities": {}}
        refusal: dict[str, Any] = {"code": -32022, "message": "Unsupported protocol version"}
        if MODE == "lying":
            return {**refusal, "data": {"requested": requested, "supported": [1, 2]}}
        if MODE == "newer-to-v1":
            return v2
        if MODE == "v2-in-v1-shape":
            return {"protocolVersion": 2, "agentCapabilities": {}, "agentInfo": INFO}
        if requested >= 2:
            return v2
        if MODE == "no-data":
            return refusal
        shown = requested + 1 if MODE == "wrong-requested" else requested
        return {**refusal, "data": {"requested": shown, "supported": [2]}}


main(NegotiationAgent)
