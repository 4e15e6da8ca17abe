"""The floor client: blocking, orjson, no validation: `floor_client.py WORKLOAD -- AGENT ARGV...`.

Same workloads, warm-up and checks (count, order, size) as the other clients.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import threading
import time
from typing import Any

import orjson
from _common import (
    BIG,
    COLD,
    CONCURRENT,
    N_READS,
    N_ROUND_TRIPS,
    N_SESSIONS_W6,
    STREAMS,
    WARM_READS,
    WARM_ROUND_TRIPS,
    WARM_STREAM,
    file_text,
    percentiles,
    rss_mb,
    status_mb,
)


class Peer:
    def __init__(self, agent: list[str]) -> None:
        self.proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = 0
        self.counts: dict[str, int] = {}
        self.size = 40
        self.read_answer = {"content": "hello\n"}

    def request(self, method: str, params: Any) -> tuple[int, bytes]:
        self.ids += 1
        line = orjson.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        return self.ids, line + b"\n"

    def send(self, method: str, params: Any) -> int:
        rid, line = self.request(method, params)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        return rid

    def until_result(self, rid: int) -> Any:
        assert self.proc.stdout is not None and self.proc.stdin is not None
        while True:
            try:
                msg = orjson.loads(self.proc.stdout.readline())
            except orjson.JSONDecodeError:
                raise SystemExit("the agent's output ended (its stderr says why)") from None
            if msg.get("method") == "session/update":
                sid = msg["params"]["sessionId"]
                text = msg["params"]["update"]["content"]["text"]
                expected = self.counts.get(sid, 0)
                if len(text) != self.size or int(text[:8]) != expected:
                    raise SystemExit(f"update {text[:8]!r} of {len(text)}, expected {expected}")
                self.counts[sid] = expected + 1
            elif msg.get("method") == "fs/read_text_file":
                self.proc.stdin.write(
                    orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": self.read_answer})
                    + b"\n"
                )
                self.proc.stdin.flush()
            elif msg.get("id") == rid:
                if "result" not in msg:
                    raise SystemExit(f"error answer: {msg}")
                return msg["result"]

    def call(self, method: str, params: Any) -> Any:
        return self.until_result(self.send(method, params))

    def new_session(self) -> str:
        return str(self.call("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"])

    def prompt(self, sid: str, text: str) -> Any:
        return self.call("session/prompt", prompt(sid, text))


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def warm_up(peer: Peer) -> None:
    sid = peer.new_session()
    peer.prompt(sid, f"stream {WARM_STREAM}")
    for _ in range(WARM_ROUND_TRIPS):
        peer.prompt(sid, "noop")
    peer.prompt(sid, f"read {WARM_READS}")


def stream(peer: Peer, count: int, size: int) -> float:
    sid = peer.new_session()
    peer.size = size
    t0 = time.perf_counter()
    peer.prompt(sid, f"stream {count} {size}")
    elapsed = time.perf_counter() - t0
    if peer.counts[sid] != count:
        raise SystemExit(f"got {peer.counts[sid]} updates")
    return elapsed


def concurrent(peer: Peer, sessions: int, updates: int) -> dict[str, object]:
    sids = [peer.new_session() for _ in range(sessions)]
    requests = [peer.request("session/prompt", prompt(s, f"stream {updates}")) for s in sids]
    assert peer.proc.stdin is not None
    stdin = peer.proc.stdin

    def write_all() -> None:
        for _, line in requests:
            stdin.write(line)
            stdin.flush()

    # All requests are written before the first answer is read. Past a pipe's worth of
    # requests the agent would fill the other pipe with updates and stop reading: grow the
    # pipe (Linux), or write from a thread when it cannot grow.
    inline = pipe_holds(stdin.fileno(), sum(len(line) for _, line in requests))
    writer = None if inline else threading.Thread(target=write_all)
    t0 = time.perf_counter()
    if writer is None:
        write_all()
    else:
        writer.start()
    for rid, _ in requests:
        peer.until_result(rid)
    elapsed = time.perf_counter() - t0
    if writer is not None:
        writer.join()
    if not all(peer.counts.get(s) == updates for s in sids):
        raise SystemExit("missing updates")
    return {"value": elapsed, "rate": sessions * updates / elapsed}


def pipe_holds(fd: int, size: int) -> bool:
    """Whether the pipe `fd` can hold `size` bytes, after growing it if needed."""
    try:
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) >= size:
            return True
        return fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size) >= size
    except (OSError, AttributeError):
        return False


def peaks(peer: Peer) -> dict[str, float]:
    return {
        "client peak": status_mb("self", "VmHWM"),
        "agent peak": status_mb(peer.proc.pid, "VmHWM"),
    }


def measure(workload: str, peer: Peer, started: float) -> dict[str, object]:
    if workload == "W5":
        return {"value": (time.perf_counter() - started) * 1000}
    if workload == "W6":
        for _ in range(N_SESSIONS_W6):
            peer.new_session()
        return {"value": rss_mb(peer.proc.pid)}
    if workload not in COLD:
        warm_up(peer)
    if workload in STREAMS:
        count, size = STREAMS[workload]
        return {"value": count / stream(peer, count, size)}
    if workload in CONCURRENT:
        return concurrent(peer, *CONCURRENT[workload])
    sid = peer.new_session()
    if workload == "W2":
        samples = []
        for _ in range(N_ROUND_TRIPS):
            t0 = time.perf_counter()
            peer.call("session/prompt", prompt(sid, "noop"))
            samples.append((time.perf_counter() - t0) * 1e6)
        return percentiles(samples)
    if workload == "W3":
        t0 = time.perf_counter()
        peer.prompt(sid, f"read {N_READS}")
        return {"value": N_READS / (time.perf_counter() - t0)}
    if workload == "BIG-UPDATE":
        return {"value": stream(peer, 1, BIG) * 1000, **peaks(peer)}
    if workload == "BIG-READ":
        peer.read_answer = {"content": file_text(BIG)}
        t0 = time.perf_counter()
        peer.prompt(sid, f"read 1 {BIG}")  # the agent checks the size
        return {"value": (time.perf_counter() - t0) * 1000, **peaks(peer)}
    raise SystemExit(f"unknown workload {workload}")


def run(workload: str, agent: list[str]) -> dict[str, object]:
    started = time.perf_counter()
    peer = Peer(agent)
    try:
        peer.call(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
        )
        return measure(workload, peer, started)
    finally:
        assert peer.proc.stdin is not None and peer.proc.stdout is not None
        peer.proc.stdin.close()
        peer.proc.stdout.close()  # an agent stopped midway gets EPIPE instead of blocking
        peer.proc.wait(5)


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(run(workload, agent)))


if __name__ == "__main__":
    main()
