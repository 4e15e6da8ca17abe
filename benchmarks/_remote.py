"""W8: remote ACP. A server process (the bench agent behind `acpstack.server` on uvicorn, or
the TypeScript SDK's AcpServer on node:http + ws) and a client process talk over
127.0.0.1, both pinned to CPU 0 like the other workloads. The client measures one prompt
streaming N 40-byte chunks (updates/s, count and order checked) and N sequential prompts
answered at once (round trip p50/p99 µs), over streamable HTTP and over WebSocket.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._report import fmt
from benchmarks._runner import PEERS, TIMEOUT, Results, failure_line, pinned

PROFILES = ("http", "ws")


def _sides(ours_python: Path, node_peers: Path | None) -> dict[str, tuple[list[str], list[str]]]:
    """impl -> (server argv, client argv without the URL)."""
    out = {
        "acpstack": (
            [str(ours_python), str(PEERS / "acpstack_remote_server.py"), "0"],
            [str(ours_python), str(PEERS / "acpstack_remote_client.py")],
        )
    }
    if node_peers is not None:
        out["ts-sdk"] = (
            ["node", str(node_peers / "ts_remote_server.mjs"), "0"],
            ["node", str(node_peers / "ts_remote_client.mjs")],
        )
    return out


def _pairs(
    sides: dict[str, tuple[list[str], list[str]]], chosen: list[str]
) -> list[tuple[str, str, str]]:
    """(label, client impl, server impl): each with itself, then the cross pairs."""
    names = [n for n in sides if n in chosen]
    out = [(n, n, n) for n in names]
    if "acpstack" in names and "ts-sdk" in names:
        out += [
            ("acpstack client → ts-sdk server", "acpstack", "ts-sdk"),
            ("ts-sdk client → acpstack server", "ts-sdk", "acpstack"),
        ]
    return out


def _start(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        pinned(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    line, deadline = b"", time.monotonic() + 30
    while not line.endswith(b"\n"):
        if not selector.select(max(0.0, deadline - time.monotonic())):
            proc.kill()
            raise RuntimeError("the server did not start")
        byte = os.read(proc.stdout.fileno(), 1)
        if not byte:
            raise RuntimeError(f"the server exited {proc.wait()}")
        line += byte
    selector.close()
    return proc, int(line.split()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def run_one(
    server: list[str], client: list[str], profile: str, env: dict[str, str]
) -> dict[str, float]:
    proc, port = _start(server, env)
    try:
        url = f"{profile}://127.0.0.1:{port}/acp"
        done = subprocess.run(
            pinned([*client, url]), capture_output=True, text=True, timeout=TIMEOUT, env=env
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"exit {done.returncode}: {failure_line(done.stderr)[:200]}")
        result: dict[str, float] = json.loads(lines[-1])
        return result
    finally:
        _stop(proc)


def run_w8(
    ours_python: Path,
    node_peers: Path | None,
    chosen: list[str],
    reps: int,
    quick: bool,
    results: Results,
) -> None:
    env = dict(os.environ, ACPSTACK_BENCH_QUICK="1" if quick else "0")
    sides = _sides(ours_python, node_peers)
    plan = _pairs(sides, chosen)
    for rep in range(reps):
        for profile in PROFILES:
            for label, client, server in plan if rep % 2 == 0 else list(reversed(plan)):
                print(f"  rep {rep + 1}/{reps} W8 {profile} {label}", file=sys.stderr, flush=True)
                try:
                    result = run_one(sides[server][0], sides[client][1], profile, env)
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                    results.errors.setdefault(label, {})[f"W8 {profile}"] = str(exc)
                    continue
                results.add(label, f"W8 {profile}", result["value"])
                results.add(label, f"W8 {profile} p50", result["p50"])
                results.add(label, f"W8 {profile} p99", result["p99"])


def table(results: Results) -> str:
    labels = [
        label
        for label in results.samples
        if any(m.startswith("W8") for m in results.samples[label])
    ]
    if not labels:
        return ""
    metrics = [
        (f"W8 {p}{suffix}", unit)
        for p in PROFILES
        for suffix, unit in (("", "updates/s"), (" p50", "µs"), (" p99", "µs"))
    ]
    rows = [["pair", *(f"{m} {u}" for m, u in metrics)]]
    for label in labels:
        rows.append([label, *(fmt(results.median(label, m), u) for m, u in metrics)])
    ours, theirs = "acpstack", "ts-sdk"
    if ours in labels and theirs in labels:
        ratio = ["acpstack vs ts-sdk"]
        for metric, unit in metrics:
            a, b = results.median(ours, metric), results.median(theirs, metric)
            ratio.append(
                "—" if not a or not b else f"{(a / b if unit == 'updates/s' else b / a):.2f}×"
            )
        rows.append(ratio)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return (
        "W8 remote (streamable HTTP and WebSocket, client and server pinned to CPU 0):\n"
        + "\n".join(lines)
    )
