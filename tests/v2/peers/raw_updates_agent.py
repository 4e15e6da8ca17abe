"""A v2 agent that writes raw JSON lines: `raw_updates_agent.py UPDATES_FILE`.

It answers `initialize` (protocol 2), `session/new` (session "s1") and `session/prompt`
(acknowledged), then writes `running`, every line of UPDATES_FILE as the `update` of one
`session/update` of "s1" (exactly as written, valid or not), and `idle`. For tests of
what a client makes of updates our own agents never send.
"""

from __future__ import annotations

import json
import sys


def write(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def notify_raw(update: str) -> None:
    sys.stdout.write(
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        + update
        + "}}\n"
    )


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        updates = [line.strip() for line in f if line.strip()]
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # a notification (cancel): nothing to do
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": 2,
                "info": {"name": "raw-updates", "version": "1"},
                "capabilities": {"session": {}},
            }
        elif method == "session/new":
            result = {"sessionId": "s1"}
        elif method == "session/prompt":
            write({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
            notify_raw('{"sessionUpdate":"state_update","state":"running"}')
            for update in updates:
                notify_raw(update)
            notify_raw('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}')
            sys.stdout.flush()
            continue
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            write({"jsonrpc": "2.0", "id": rid, "error": error})
            continue
        write({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
