"""The failover run: many sessions streaming through HAProxy to three `acpstack serve`
processes on one PostgreSQL, one server killed with SIGKILL part way through.

`run_failover` starts a `Cluster`, runs tools/cluster/failover_load.py against its
frontend in a process of its own, kills server 0 (`node1`) once `kill_at` of the turns
are done, and returns the run's `Account` (tools/cluster/_account.py: what each server
held, what was lost where, the failover times, the verdict), with the store's counts and
the rates in `extra`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
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
) -> Account:
    """`collapse`: server 1 (`node2`) dies too, right after the kill, but is not declared
    killed: what its clients see is what they see when HAProxy takes out a live server
    (an overloaded host), and the verdict must fail the run (tests/remote/test_failover.py)."""
    if sessions % per_connection:
        raise ValueError("sessions must be a multiple of per_connection")
    env = {"ACPSTACK_CHUNK_DELAY": str(chunk_delay)}
    started = time.monotonic()
    with Cluster(3, env=env) as cluster, tempfile.TemporaryFile("w+") as errors:
        setup = time.monotonic() - started
        # "http-one-stream": HTTP with every message on the connection's one stream
        url = cluster.url if profile.startswith("http") else "ws" + cluster.url[4:]
        argv = [sys.executable, str(LOAD), url, str(sessions), str(per_connection)]
        argv += [str(turns), str(chunks)]
        if profile == "http-one-stream":
            argv.append("--one-stream")
        driver = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, text=True
        )
        watchdog = threading.Timer(timeout, driver.kill)
        watchdog.start()
        result: dict[str, Any] = {}
        killed_after = None
        try:
            assert driver.stdout is not None
            for line in driver.stdout:
                message = json.loads(line)
                if "progress" not in message:
                    result = message
                elif killed_after is None and message["progress"] >= kill_at * sessions * turns:
                    killed_after = message["progress"]
                    cluster.kill(0)
                    if collapse:
                        collapse_holding_a_turn(cluster, 1)
            code = driver.wait()
        finally:
            watchdog.cancel()
            if driver.poll() is None:
                driver.kill()
                driver.wait()
            if driver.stdout is not None:
                driver.stdout.close()
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
            "node_stderr_tail": "".join(cluster.nodes[1].lines[-20:]),
        }
    )
    return account
