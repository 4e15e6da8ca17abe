"""The failover run: many sessions streaming through HAProxy to three `acpstack serve`
processes on one PostgreSQL, one server killed with SIGKILL part way through.

`run_failover` starts a `Cluster`, runs tools/cluster/failover_load.py against its
frontend in a process of its own, kills server 0 (`node1`) once `kill_at` of the turns
are done, and returns the run's `Account` (tools/cluster/_account.py: what each server
held, what was lost where, the failover times, the verdict), with the store's counts and
the rates in `extra`.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from tools.cluster._account import Account, judge
from tools.cluster._cluster import Cluster

LOAD = Path(__file__).resolve().parent / "failover_load.py"


def collapse_holding_a_turn(cluster: Cluster, index: int, patience: float = 60) -> None:
    """SIGKILL server `index` at a moment it holds a turn begun and not ended, so that the
    collapse surely loses a turn (on a loaded machine a server killed "right after" the
    other could hold none, and the run then rightly lost nothing there). The server is
    stopped while its turn logs are read: nothing it holds can end in between. After
    `patience` seconds without such a moment, it is killed anyway."""
    node = cluster.nodes[index]
    deadline = time.monotonic() + patience
    while True:
        node.proc.send_signal(signal.SIGSTOP)
        if cluster.holds_unfinished_turn(index) or time.monotonic() > deadline:
            node.proc.kill()
            node.proc.wait(timeout=20)
            return
        node.proc.send_signal(signal.SIGCONT)
        time.sleep(0.02)


class HealthProbe:
    """GET /healthz on each server directly (not through HAProxy), on a new TCP
    connection every `every` seconds: [when, seconds to answer] per server. /healthz waits
    on neither the store nor the agents, so this is how long a request waits for the
    server's event loop (a diagnosis of a slow failover)."""

    def __init__(self, cluster: Cluster, every: float = 0.1) -> None:
        self.ports = [node.port for node in cluster.nodes]
        self.every = every
        self.samples: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(self.ports))}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            for index, port in enumerate(self.ports):
                sent = time.monotonic()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                try:
                    conn.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
                    conn.getresponse().read()
                except (OSError, http.client.HTTPException):
                    continue  # a dead (or dying: an answer cut short) server: nothing to time
                finally:
                    conn.close()
                self.samples[index].append((sent, time.monotonic() - sent))


def _spread(values: list[float]) -> list[float]:
    """[count, median, slowest] (seconds, rounded)."""
    if not values:
        return [0, 0.0, 0.0]
    return [len(values), round(statistics.median(values), 3), round(max(values), 3)]


def diagnosis(
    probe: HealthProbe, lags: list[list[float]], kill: float | None, window: float = 10.0
) -> dict[str, Any]:
    """Waiting times before the kill (the `window` seconds before it) and after it (the
    `window` seconds after): the load driver's event loop lag, and each live server's
    /healthz time."""
    if kill is None:
        return {}
    out: dict[str, Any] = {}
    for name, lo, hi in (("before", kill - window, kill), ("after", kill, kill + window)):
        out[f"client_loop_lag_{name}"] = _spread([lag for at, lag in lags if lo <= at < hi])
        for index, samples in probe.samples.items():
            took = [s for at, s in samples if lo <= at < hi]
            out[f"node{index + 1}_healthz_{name}"] = _spread(took)
    return out


HTTPLOG = re.compile(
    r"\[(\d+/\w+/\d+:\d+:\d+:\d+\.\d+)\] \S+ (\S+) "
    r"(-?\d+)/(-?\d+)/(-?\d+)/(-?\d+)/(\+?-?\d+) (\d+) .*\"(\w+) "
)


def haproxy_timers(said: str, kill_wall: float, window: float = 10.0) -> dict[str, Any]:
    """From HAProxy's `option httplog` lines (ACPSTACK_HAPROXY_LOG=1) of the requests
    accepted within `window` seconds after the kill: per method and status, [count, median,
    slowest] of Tw (queued in HAProxy), Tc (TCP connect to the server), Tr (the server's
    answer headers) and Ta (the whole request; a stream's lasts until it ends), in ms."""
    rows: dict[str, dict[str, list[float]]] = {}
    for line in said.splitlines():
        match = HTTPLOG.search(line)
        if match is None:
            continue
        accepted = datetime.strptime(match[1], "%d/%b/%Y:%H:%M:%S.%f").timestamp()
        if not kill_wall <= accepted < kill_wall + window:
            continue
        key = f"{match[9]} {match[8]} {match[2]}"
        timers = rows.setdefault(key, {"Tw": [], "Tc": [], "Tr": [], "Ta": []})
        for name, group in (("Tw", 4), ("Tc", 5), ("Tr", 6), ("Ta", 7)):
            timers[name].append(float(match[group].lstrip("+")))
    return {key: {k: _spread(v) for k, v in t.items()} for key, t in sorted(rows.items())}


def _read_lines(number: int, proc: subprocess.Popen[str], out: queue.Queue[Any]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        out.put((number, line))
    out.put((number, None))


def merge_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One driver's result, or several drivers' (each ran a share of the connections,
    numbered apart) as one."""
    if len(results) <= 1:
        return results[0] if results else {}
    merged: dict[str, Any] = {
        "sessions": sum(r.get("sessions", 0) for r in results),
        "turns_per_session": results[0].get("turns_per_session"),
        "chunks_per_turn": results[0].get("chunks_per_turn"),
        "started": min(r.get("started", 0.0) for r in results),
        "seconds": max(r.get("seconds", 0.0) for r in results),
        "verify_seconds": max(r.get("verify_seconds", 0.0) for r in results),
        "problem_count": sum(r.get("problem_count", 0) for r in results),
        "counts": {},
        "connections": {},
        "not_reattached": {},
    }
    for key in ("records", "loop_lag", "failovers", "session_failovers", "problems"):
        merged[key] = [item for r in results for item in r.get(key, [])]
    for r in results:
        merged["connections"].update(r.get("connections", {}))
        merged["not_reattached"].update(r.get("not_reattached", {}))
        for name, count in r.get("counts", {}).items():
            merged["counts"][name] = merged["counts"].get(name, 0) + count
    return merged


def run_failover(
    *,
    sessions: int,
    per_connection: int = 10,
    turns: int = 4,
    chunks: int = 20,
    profile: str = "http",
    kill_at: float = 0.4,
    timeout: float = 600,
    chunk_delay: float = 0.005,
    collapse: bool = False,
    drivers: int = 1,
) -> Account:
    """`collapse`: server 1 (`node2`) dies too, right after the kill, but is not declared
    killed: what its clients see is what they see when HAProxy takes out a live server
    (an overloaded host), and the verdict must fail the run (tests/remote/test_failover.py)."""
    if sessions % (per_connection * drivers):
        raise ValueError("sessions must be a multiple of per_connection times drivers")
    env = {"ACPSTACK_CHUNK_DELAY": str(chunk_delay)}
    started = time.monotonic()
    with Cluster(3, env=env) as cluster, tempfile.TemporaryFile("w+") as errors:
        setup = time.monotonic() - started
        # "http-streams": HTTP with a stream per session (the RFD's way, without the
        # one-stream extension the client asks for by default)
        url = cluster.url if profile.startswith("http") else "ws" + cluster.url[4:]
        share = sessions // drivers
        procs = []
        for number in range(drivers):
            argv = [sys.executable, str(LOAD), url, str(share), str(per_connection)]
            if profile_to := os.environ.get("ACPSTACK_PROFILE_DRIVER"):
                # a diagnosis: where the load driver's own CPU goes (cProfile's output file)
                argv[1:1] = ["-m", "cProfile", "-o", f"{profile_to}.{number}"]
            argv += [str(turns), str(chunks), "--first", str(number * share // per_connection)]
            if profile == "http-streams":
                argv.append("--streams")
            procs.append(
                subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, text=True
                )
            )
        watchdog = threading.Timer(timeout, lambda: [p.kill() for p in procs])
        watchdog.start()
        probe = HealthProbe(cluster).__enter__()
        lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
        readers = [
            threading.Thread(target=_read_lines, args=(number, proc, lines), daemon=True)
            for number, proc in enumerate(procs)
        ]
        for reader in readers:
            reader.start()
        results: list[dict[str, Any]] = []
        progress = [0] * drivers
        killed_after = None
        try:
            running = drivers
            while running:
                number, line = lines.get()
                if line is None:
                    running -= 1
                    continue
                message = json.loads(line)
                if "progress" not in message:
                    results.append(message)
                    continue
                progress[number] = message["progress"]
                if killed_after is None and sum(progress) >= kill_at * sessions * turns:
                    killed_after = sum(progress)
                    cluster.kill(0)
                    if collapse:
                        collapse_holding_a_turn(cluster, 1)
            codes = [proc.wait() for proc in procs]
            code = next((c for c in codes if c), 0)
        finally:
            probe.__exit__()
            watchdog.cancel()
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
        result = merge_results(results)
        cluster_said = cluster.haproxy_said()
        errors.seek(0)
        stderr_tail = errors.read()[-12000:]
        events = int(
            cluster.postgres.psql("SELECT coalesce(sum(n), 0) FROM acpstack_events", "acpstack")
        )
        account = judge(
            result,
            cluster.turns_begun(),
            dict(cluster.killed),
            profile=profile,
            sessions=sessions,
            turns_per_session=turns,
            killed_after_turns=killed_after,
            servers_down=cluster.servers_down(),
            exit_code=code,
            stderr_tail=stderr_tail,
            dead=dict(cluster.dead),
        )
    seconds = float(result.get("seconds") or 0) or 1.0
    received = sum(t.chunks for t in account.turns if t.outcome == "acknowledged")
    account.extra.update(
        {
            "setup_seconds": round(setup, 2),
            "run_seconds": round(seconds, 2),
            "verify_seconds": round(float(result.get("verify_seconds") or 0), 2),
            "store_events": events,
            "store_events_per_s": round(events / seconds),
            "chunks_received": received,
            "chunks_per_s": round(received / seconds),
            "turns_per_s": round(len(account.turns) / seconds, 1),
            "stderr_tail": stderr_tail,
            "haproxy": haproxy_timers(cluster_said, cluster.killed_wall),
            "slow_steps": [line for node in cluster.nodes for line in node.slow_steps][-40:],
            "node_stderr_tail": "".join(cluster.nodes[1].lines[-20:]),
            "waits": diagnosis(
                probe, result.get("loop_lag", []), min(cluster.killed.values(), default=None)
            ),
        }
    )
    return account
