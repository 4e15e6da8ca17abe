"""Hostile traffic against one `acpstack serve` process: what it costs the server.

`python -m benchmarks.remote_hostile [--bodies 20] [--body-mib 16] [--flood-mib 64]
[--loris 500]` starts `acpstack serve` (the bench agent, in process, a token) and runs, one
after the other:

- bodies: N concurrent POSTs of a message just under the 16 MiB limit on one ACP
  connection; the server's peak RSS (VmHWM) before and after;
- header flood: one client streams an endless header (up to --flood-mib) while /healthz is
  asked every 50 ms; how much the server read before its 431, and /healthz's latency;
- slowloris: --loris connections that send half a request line and stop; when the server
  closed them (its header timeout), and /healthz's latency meanwhile.

Numbers go to docs/remote.md ("Hostile clients"). Both processes share the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOKEN = "bench-hostile-token"


def vm(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key}")


async def healthz(port: int) -> float:
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    await reader.read()
    writer.close()
    return (time.perf_counter() - started) * 1000


async def watch_health(port: int, stop: asyncio.Event) -> list[float]:
    latencies = []
    while not stop.is_set():
        latencies.append(await healthz(port))
        await asyncio.sleep(0.05)
    return latencies


def summary(latencies: list[float]) -> str:
    if not latencies:
        return "no sample"
    ordered = sorted(latencies)
    return (
        f"median {statistics.median(ordered):.1f} ms, worst {ordered[-1]:.1f} ms "
        f"({len(ordered)} checks)"
    )


async def post(port: int, body: bytes, connection: str = "") -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        + (f"Acp-Connection-Id: {connection}\r\n" if connection else "")
        + "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


async def bodies(port: int, pid: int, count: int, size: int) -> None:
    init = json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    ).encode()
    answer = await post(port, init)
    connection = re.search(rb"acp-connection-id: (\S+)", answer, re.I)
    assert connection is not None, answer[:300]
    padding = size - 200
    body = (
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x","_meta":{"pad":"'
        + b"a" * padding
        + b'"}}}'
    )
    before = vm(pid, "VmHWM")
    started = time.perf_counter()
    answers = await asyncio.gather(
        *(post(port, body, connection.group(1).decode()) for _ in range(count))
    )
    took = time.perf_counter() - started
    statuses = sorted({a.split(b" ", 2)[1].decode() for a in answers})
    after = vm(pid, "VmHWM")
    print(
        f"bodies: {count} x {size / 2**20:.1f} MiB in {took:.1f} s, statuses {statuses}; "
        f"peak RSS {before / 1024:.0f} MiB before, {after / 1024:.0f} MiB after "
        f"(+{(after - before) / 1024:.0f} MiB, {(after - before) / 1024 / count:.1f} MiB a body)"
    )


async def flood(port: int, most: int) -> None:
    stop = asyncio.Event()
    watcher = asyncio.ensure_future(watch_health(port, stop))
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: ")
    sent = 0
    answer = asyncio.ensure_future(reader.read(200))
    try:
        while sent < most and not answer.done():
            writer.write(b"a" * 65536)
            await writer.drain()
            sent += 65536
    except ConnectionError:
        pass
    first = await asyncio.wait_for(answer, 10)
    writer.close()
    await asyncio.sleep(0.5)
    stop.set()
    status_line = first.split(b"\r\n", 1)[0].decode()
    print(
        f"header flood: {status_line!r} after {sent / 1024:.0f} KiB sent; "
        f"/healthz {summary(await watcher)}"
    )


async def slowloris(port: int, count: int) -> None:
    stop = asyncio.Event()
    watcher = asyncio.ensure_future(watch_health(port, stop))
    started = time.perf_counter()
    conns = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        conns.append((reader, writer))
    opened = time.perf_counter() - started
    results = await asyncio.gather(*(r.read() for r, _ in conns), return_exceptions=True)
    closed = time.perf_counter() - started
    for _, writer in conns:
        writer.close()
    stop.set()
    codes: dict[str, int] = {}
    for result in results:
        key = result.split(b" ", 2)[1].decode() if isinstance(result, bytes) and result else "reset"
        codes[key] = codes.get(key, 0) + 1
    print(
        f"slowloris: {count} connections opened in {opened:.1f} s, all closed by the server "
        f"after {closed:.1f} s ({codes}); /healthz {summary(await watcher)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=20)
    parser.add_argument("--body-mib", type=float, default=16)
    parser.add_argument("--flood-mib", type=int, default=64)
    parser.add_argument("--loris", type=int, default=500)
    args = parser.parse_args()
    argv = [
        sys.executable,
        "-m",
        "acpstack",
        "serve",
        "--port",
        "0",
        "--token",
        TOKEN,
        "--agent",
        f"{HERE / 'peers' / 'acpstack_agent.py'}:BenchAgent",
    ]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"127\.0\.0\.1:(\d+)/acp", line)
    assert match, line
    port = int(match.group(1))
    try:
        size = int(args.body_mib * 2**20) - 1024

        async def run() -> None:
            await bodies(port, proc.pid, args.bodies, size)
            await flood(port, args.flood_mib * 2**20)
            await slowloris(port, args.loris)

        asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
