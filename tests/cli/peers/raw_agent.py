"""A hand-written NDJSON agent (no acpstack) that misbehaves on request, byte for byte.

Prompt texts: "stderr N" writes N short lines to stderr; "bigline N" sends one
session/update line of about N bytes (written in pieces), and when N is over the
client's limit waits for the client's parse error (so the client has seen all of it);
"poison" writes a good
notification, a line that is neither JSON nor UTF-8, and another good notification in
one write; "poison-utf8" the same with a JSON line holding an invalid UTF-8 byte. Checkpoints (see rendezvous.py) before and after the work let a test measure
the client while the agent waits.
"""

from __future__ import annotations

import json
import os
import sys

from rendezvous import checkpoint

POISON = {
    "poison": b'{"jsonrpc": "2.0", "method": "\xff\xfe not json\n',
    "poison-utf8": b'{"jsonrpc": "2.0", "method": "bad\xff"}\n',  # JSON, but not UTF-8
}


def send(message: dict[str, object]) -> None:
    write_all(json.dumps(message).encode() + b"\n")


def write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def chunk_line(text: str) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s1", "update": update},
    }
    return json.dumps(message).encode() + b"\n"


def prompt(text: str) -> None:
    verb, _, arg = text.partition(" ")
    checkpoint("before")
    if verb == "stderr":
        block = "".join(f"log line {i:09d} of the agent\n" for i in range(10_000)).encode()
        for _ in range(int(arg) // 10_000):
            os.write(2, block)
    elif verb == "bigline":
        head, tail = chunk_line("@").split(b"@")
        write_all(head)
        piece = b"x" * (1 << 20)
        for _ in range(int(arg) >> 20):
            write_all(piece)
        write_all(tail)
        if int(arg) > 64 * 1024 * 1024:
            answer = json.loads(sys.stdin.buffer.readline())
            assert answer["error"]["code"] == -32700, answer
    elif verb in POISON:
        write_all(chunk_line("first") + POISON[verb] + chunk_line("second"))
    checkpoint("after")
    write_all(chunk_line("done"))


def main() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}},
                }
            )
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            prompt(message["params"]["prompt"][0]["text"])
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    main()
