"""Several `acpstack serve` processes behind HAProxy, sessions in a throwaway PostgreSQL.

`Cluster` starts the database (`LocalPostgres`), N servers on free ports of 127.0.0.1
(each its own process, all with `ACPSTACK_STORE` pointing at the database), and HAProxy
with examples/deploy/haproxy.cfg as it is (addresses through the environment). `kill(i)`
ends a server with SIGKILL. Everything stays on loopback and stops with the block.

Server i is HAProxy's `node{i+1}`; each writes the turns it begins (stream_agent.py) to a
file of its own, which `turns_begun()` reads: what a server held when it died.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from tools.cluster._postgres import LocalPostgres, NotInstalled, free_port
from tools.cluster._service import Service

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CFG = ROOT / "examples" / "deploy" / "haproxy.cfg"
STREAM_AGENT = f"{ROOT / 'tools' / 'cluster' / 'stream_agent.py'}:make"
READY = re.compile(r"on http://127\.0\.0\.1:(\d+)/acp")


class ClusterUnavailable(RuntimeError):
    """HAProxy is installed but would not start, or refused the configuration."""


class Node:
    """One `acpstack serve` process; its stderr is kept (the last lines) for diagnosis."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.port = 0
        self.lines: list[str] = []
        self.slow_steps: list[str] = []
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            self.lines = [*self.lines[-200:], line]
            if "seconds" in line and "Executing" in line:  # asyncio's debug mode: a slow step
                self.slow_steps.append(line)
            match = READY.search(line)
            if match and not self._ready.is_set():
                self.port = int(match.group(1))
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float = 60) -> None:
        if not self._ready.wait(timeout) or not self.port:
            raise RuntimeError(f"acpstack serve did not start: {''.join(self.lines)[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        self._reader.join(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def find_haproxy() -> str:
    found = shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.path.exists(p)), None
    )
    if found is None:
        raise NotInstalled("HAProxy is not installed (apt-get install haproxy)")
    return found


def wait_for_port(port: int, deadline: float) -> None:
    """Connect until something listens on 127.0.0.1:port (another process: no event to wait on)."""
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")
        time.sleep(0.02)


class Cluster(Service):
    """`with Cluster(nodes=3) as c: url = c.url` (the HAProxy frontend)."""

    def __init__(
        self,
        nodes: int = 3,
        *,
        agent: str = STREAM_AGENT,
        serve_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        if nodes != 3:
            raise ValueError("examples/deploy/haproxy.cfg lists three servers")
        self.count = nodes
        self.agent = agent
        self.serve_args = serve_args
        self.extra_env = dict(env or {})
        self.postgres = LocalPostgres()
        self.nodes: list[Node] = []
        self.haproxy: subprocess.Popen[bytes] | None = None
        self.haproxy_log: IO[bytes] | None = None
        self.front = 0
        self.store_url = ""
        self.turn_logs: tempfile.TemporaryDirectory[str] | None = None
        self.killed: dict[str, float] = {}  # node name -> time.monotonic() of the SIGKILL
        self.dead: dict[str, float] = {}  # node name -> time.monotonic() once it was reaped
        self.killed_wall = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.front}/acp"

    def start(self) -> None:
        haproxy = find_haproxy()
        self.turn_logs = tempfile.TemporaryDirectory(prefix="acpstack-turns-")
        self.postgres.start()
        self.store_url = self.postgres.create_database("acpstack")
        env = {**os.environ, "ACPSTACK_STORE": self.store_url, **self.extra_env}
        for index in range(self.count):
            argv = [sys.executable, "-m", "acpstack", "serve", "--port", "0"]
            argv += ["--agent", self.agent, "--max-connections", "4096"]
            if not any(a.startswith("--token") for a in self.serve_args):
                argv.append("--no-token")  # the clients here connect without one
            # As docs/deployment.md advises behind a load balancer: a connection whose
            # client is gone (e.g. HAProxy cut it) lets its sessions go within 20-25 s.
            argv += ["--idle-timeout", "20", *self.serve_args]
            turn_log = str(self._turn_log(index))
            node_env = {
                **env,
                "ACPSTACK_TURN_LOG": turn_log,
                "ACPSTACK_NODE_NAME": self.name(index),
            }
            if os.environ.get("ACPSTACK_NODE_ASYNCIO_DEBUG") == "1":
                # a diagnosis: asyncio logs each callback that holds the loop over 100 ms
                node_env["PYTHONASYNCIODEBUG"] = "1"
            self.nodes.append(Node(argv, node_env))
        for node in self.nodes:
            node.wait_ready()
        self.front = free_port()
        proxy_env = {**os.environ, "ACP_FRONT": f"127.0.0.1:{self.front}"}
        for index, node in enumerate(self.nodes, 1):
            proxy_env[f"ACP_NODE{index}"] = f"127.0.0.1:{node.port}"
        config = self._haproxy_config()
        check = subprocess.run(
            [haproxy, "-c", "-q", "-f", config], env=proxy_env, capture_output=True
        )
        if check.returncode != 0:
            raise ClusterUnavailable(f"haproxy -c: {check.stderr.decode(errors='replace')}")
        self.haproxy_log = tempfile.TemporaryFile()
        self.haproxy = subprocess.Popen(
            [haproxy, "-db", "-f", config],
            env=proxy_env,
            stdin=subprocess.DEVNULL,
            stdout=self.haproxy_log,
            stderr=self.haproxy_log,
        )
        try:
            wait_for_port(self.front, time.monotonic() + 20)
        except RuntimeError:
            self.haproxy_log.seek(0)
            said = self.haproxy_log.read().decode(errors="replace")[-2000:]
            raise ClusterUnavailable(f"HAProxy did not start: {said}") from None

    def _haproxy_config(self) -> str:
        """examples/deploy/haproxy.cfg as it is; with ACPSTACK_HAPROXY_LOG=1 (a diagnosis)
        a copy that logs every request with its timers (`option httplog`: Tq/Tw/Tc/Tr/Ta)
        to HAProxy's stdout, which `haproxy_said()` returns."""
        if os.environ.get("ACPSTACK_HAPROXY_LOG") != "1":
            return str(HAPROXY_CFG)
        assert self.turn_logs is not None
        text = HAPROXY_CFG.read_text()
        text = text.replace("global\n", "global\n    log stdout format raw local0\n", 1)
        text = text.replace("defaults\n", "defaults\n    log global\n    option httplog\n", 1)
        copy = Path(self.turn_logs.name) / "haproxy-logging.cfg"
        copy.write_text(text)
        return str(copy)

    def haproxy_said(self) -> str:
        """What HAProxy logged so far (servers going down and up, ...)."""
        if self.haproxy_log is None:
            return ""
        self.haproxy_log.seek(0)
        return self.haproxy_log.read().decode(errors="replace")

    @staticmethod
    def name(index: int) -> str:
        """Server `index`'s name in haproxy.cfg (and in the reports)."""
        return f"node{index + 1}"

    def kill(self, index: int) -> None:
        """SIGKILL one server: no goodbye to its clients, its proxy, or its database."""
        node = self.nodes[index]
        self.killed[self.name(index)] = time.monotonic()
        self.killed_wall = time.time()  # for HAProxy's log, which has wall-clock times
        os.kill(node.proc.pid, signal.SIGKILL)
        node.proc.wait(timeout=20)
        # Gone for certain only now: between the clock read above and the signal, a loaded
        # machine may let the server run on (and begin a turn) for a while.
        self.dead[self.name(index)] = time.monotonic()

    def terminate(self, index: int) -> None:
        """SIGTERM one server (it drains: running turns finish, new clients go elsewhere);
        returns at once."""
        self.nodes[index].proc.send_signal(signal.SIGTERM)

    def turns_begun(self) -> dict[str, list[tuple[str, int, float]]]:
        """Each server's turns as it began them: (session, turn, time.monotonic())."""
        begun: dict[str, list[tuple[str, int, float]]] = {}
        for index in range(len(self.nodes)):
            path = self._turn_log(index)
            lines = path.read_text().splitlines() if path.exists() else []
            rows = begun[self.name(index)] = []
            for line in lines:
                sid, turn, at = line.split()
                rows.append((sid, int(turn), float(at)))
        return begun

    def holds_unfinished_turn(self, index: int) -> bool:
        """Whether server `index` began a turn it has not ended (read from its turn logs:
        call it while the server is stopped, and the answer holds until it runs again)."""
        begun = self._turn_log(index)
        ended = begun.with_name(begun.name + ".ended")

        def turns(path: Path) -> set[tuple[str, str]]:
            lines = path.read_text().splitlines() if path.exists() else []
            return {(line.split()[0], line.split()[1]) for line in lines if line.strip()}

        return bool(turns(begun) - turns(ended))

    def _turn_log(self, index: int) -> Path:
        assert self.turn_logs is not None, "the cluster is not started"
        return Path(self.turn_logs.name) / f"{self.name(index)}.turns"

    def servers_down(self) -> list[str]:
        """HAProxy's lines saying a server went down (with the check's reason and time)."""
        return [line.strip() for line in self.haproxy_said().splitlines() if " is DOWN" in line]

    def stop(self) -> None:
        if self.haproxy is not None and self.haproxy.poll() is None:
            self.haproxy.terminate()
            try:
                self.haproxy.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.haproxy.kill()
                self.haproxy.wait()
        for node in self.nodes:
            node.stop()
        self.postgres.stop()
        if self.haproxy_log is not None:
            self.haproxy_log.close()
        if self.turn_logs is not None:
            self.turn_logs.cleanup()
