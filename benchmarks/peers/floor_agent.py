"""The floor: a minimal blocking agent that moves the same NDJSON lines with orjson and no validation."""

from __future__ import annotations

import sys

import orjson


def main() -> None:
    read, out = sys.stdin.buffer.readline, sys.stdout.buffer
    sessions: dict[str, dict[str, object]] = {}
    next_id = 0
    while line := read():
        msg = orjson.loads(line)
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            result: object = {"protocolVersion": 1}
        elif method == "session/new":
            sid = f"s{len(sessions):06d}"
            sessions[sid] = {"cwd": params["cwd"], "turns": 0}
            result = {"sessionId": sid}
        elif method == "session/prompt":
            sid = params["sessionId"]
            command, *args = params["prompt"][0]["text"].split()
            if command == "stream":
                pad = "x" * (int(args[1]) - 8 if len(args) > 1 else 32)
                for i in range(int(args[0])):
                    out.write(
                        orjson.dumps(
                            {
                                "jsonrpc": "2.0",
                                "method": "session/update",
                                "params": {
                                    "sessionId": sid,
                                    "update": {
                                        "sessionUpdate": "agent_message_chunk",
                                        "content": {"type": "text", "text": f"{i:08d}{pad}"},
                                    },
                                },
                            }
                        )
                        + b"\n"
                    )
            elif command == "read":
                size = int(args[1]) if len(args) > 1 else None
                for _ in range(int(args[0])):
                    out.write(
                        orjson.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": next_id,
                                "method": "fs/read_text_file",
                                "params": {"sessionId": sid, "path": "/bench/file.txt"},
                            }
                        )
                        + b"\n"
                    )
                    out.flush()
                    next_id += 1
                    answer = orjson.loads(read())
                    if size is not None and len(answer["result"]["content"]) != size:
                        raise SystemExit(f"read {len(answer['result']['content'])}, not {size}")
            result = {"stopReason": "end_turn"}
        else:
            continue
        out.write(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + b"\n")
        out.flush()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # the client stopped reading: it has failed and says why
        sys.exit(1)
