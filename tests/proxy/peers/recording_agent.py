"""A raw NDJSON agent for routing tests: it answers what it got, exactly as it got it.

- a request is answered `{"method", "params", "seen"}` (`seen`: every method it received so
  far, in order), except: `initialize` (an ordinary answer, protocolVersion echoed), `_hold`
  (never answered), `_ask` (first asks its client `_question` and answers with the reply),
  `_chatter` (first sends `params["count"]` `session/update` notifications numbered from 0);
- a notification `_ping` is answered with a notification `_pong` carrying its params;
  `_exit` ends the agent at once (exit code 3);
- a request whose params hold `"hold": true` is never answered, and every answer carries
  `"id"`: the id the request reached the agent with.
- `_ask` and `_ping` with params `{"as": METHOD}` use METHOD instead of `_question`/`_pong`
  (a permission request, an `fs/*` request, a `session/update`, ...).
"""

import json
import sys

seen: list[str] = []
asked: dict[int, object] = {}


def named(params: object, default: str) -> str:
    return str(params.get("as", default)) if isinstance(params, dict) else default


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method is None:  # the answer to our `_question`
        send({"jsonrpc": "2.0", "id": asked.pop(message["id"]), "result": message.get("result")})
        continue
    seen.append(method)
    params = message.get("params")
    if "id" not in message:
        if method == "_ping":
            send({"jsonrpc": "2.0", "method": named(params, "_pong"), "params": params})
        elif method == "_exit":
            sys.exit(3)
        continue
    if isinstance(params, dict) and params.get("hold") is True:
        continue
    if method == "initialize":
        caps = {"loadSession": False, "mcpCapabilities": {"http": False}}
        result = {"protocolVersion": params["protocolVersion"], "agentCapabilities": caps}
    elif method == "_hold":
        continue
    elif method == "_chatter":
        for index in range(params["count"]):
            update = {"sessionUpdate": "agent_message_chunk", "index": index}
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"update": update}})
        result = {"method": method, "params": params, "seen": list(seen)}
    elif method == "_ask":
        asked[len(asked) + 1000] = message["id"]
        question = named(params, "_question")
        send({"jsonrpc": "2.0", "id": len(asked) + 999, "method": question, "params": params})
        continue
    else:
        result = {"method": method, "params": params, "seen": list(seen)}
    result["id"] = message["id"]
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
