"""The floor: a minimal blocking agent that moves the same NDJSON lines with orjson and no validation."""

from __future__ import annotations

import sys

import orjson

PAD = "x" * 32


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
            command, _, count = params["prompt"][0]["text"].partition(" ")
            if command == "stream":
                for i in range(int(count)):
                    out.write(
                        orjson.dumps(
                            {
                                "jsonrpc": "2.0",
                                "method": "session/update",
                                "params": {
                                    "sessionId": sid,
                                    "update": {
                                        "sessionUpdate": "agent_message_chunk",
                                        "content": {"type": "text", "text": f"{i:08d}{PAD}"},
                                    },
                                },
                            }
                        )
                        + b"\n"
                    )
            elif command == "read":
                for _ in range(int(count)):
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
                    orjson.loads(read())
            result = {"stopReason": "end_turn"}
        else:
            continue
        out.write(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
