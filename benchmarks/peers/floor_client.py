"""The floor client: blocking, orjson, no validation: `floor_client.py WORKLOAD -- AGENT ARGV...`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import orjson
from _common import (
    N_READS,
    N_ROUND_TRIPS,
    N_SESSIONS_W4,
    N_SESSIONS_W6,
    N_STREAM,
    N_UPDATES_W4,
    percentiles,
    rss_mb,
)


class Peer:
    def __init__(self, agent: list[str]) -> None:
        self.proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = 0
        self.counts: dict[str, int] = {}

    def send(self, method: str, params: Any) -> int:
        self.ids += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(
            orjson.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
            + b"\n"
        )
        self.proc.stdin.flush()
        return self.ids

    def until_result(self, rid: int) -> Any:
        assert self.proc.stdout is not None and self.proc.stdin is not None
        while True:
            msg = orjson.loads(self.proc.stdout.readline())
            if msg.get("method") == "session/update":
                sid = msg["params"]["sessionId"]
                expected = self.counts.get(sid, 0)
                if int(msg["params"]["update"]["content"]["text"][:8]) != expected:
                    raise SystemExit("out of order")
                self.counts[sid] = expected + 1
            elif msg.get("method") == "fs/read_text_file":
                self.proc.stdin.write(
                    orjson.dumps(
                        {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": "hello\n"}}
                    )
                    + b"\n"
                )
                self.proc.stdin.flush()
            elif msg.get("id") == rid:
                return msg["result"]

    def call(self, method: str, params: Any) -> Any:
        return self.until_result(self.send(method, params))


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def run(workload: str, agent: list[str]) -> dict[str, object]:
    started = time.perf_counter()
    peer = Peer(agent)
    try:
        peer.call(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
        )
        if workload == "W5":
            return {"value": (time.perf_counter() - started) * 1000}
        new = {"cwd": "/tmp", "mcpServers": []}
        if workload == "W6":
            for _ in range(N_SESSIONS_W6):
                peer.call("session/new", new)
            return {"value": rss_mb(peer.proc.pid)}
        sid = peer.call("session/new", new)["sessionId"]
        if workload == "W1":
            t0 = time.perf_counter()
            peer.call("session/prompt", prompt(sid, f"stream {N_STREAM}"))
            elapsed = time.perf_counter() - t0
            assert peer.counts[sid] == N_STREAM
            return {"value": N_STREAM / elapsed}
        if workload == "W2":
            samples = []
            for _ in range(N_ROUND_TRIPS):
                t0 = time.perf_counter()
                peer.call("session/prompt", prompt(sid, "noop"))
                samples.append((time.perf_counter() - t0) * 1e6)
            return percentiles(samples)
        if workload == "W3":
            t0 = time.perf_counter()
            peer.call("session/prompt", prompt(sid, f"read {N_READS}"))
            return {"value": N_READS / (time.perf_counter() - t0)}
        if workload == "W4":
            sids = [sid] + [
                peer.call("session/new", new)["sessionId"] for _ in range(N_SESSIONS_W4 - 1)
            ]
            t0 = time.perf_counter()
            rids = [peer.send("session/prompt", prompt(s, f"stream {N_UPDATES_W4}")) for s in sids]
            for rid in rids:
                peer.until_result(rid)
            elapsed = time.perf_counter() - t0
            assert all(peer.counts[s] == N_UPDATES_W4 for s in sids)
            return {"value": elapsed}
        raise SystemExit(f"unknown workload {workload}")
    finally:
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()
        peer.proc.wait(5)


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(run(workload, agent)))


if __name__ == "__main__":
    main()
