"""A throwaway PostgreSQL server in a temporary directory, for tests and benchmarks.

`initdb` and `pg_ctl` come from Debian's `postgresql` package (found on PATH or under
/usr/lib/postgresql/*/bin). PostgreSQL refuses to run as root, so as root the server runs
as the `postgres` user (or `nobody`) through `runuser`. It listens on 127.0.0.1 and on a
unix socket in the temporary directory, on a free port, with `trust` authentication:
never for anything but a test on this machine.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from tools.cluster._service import Service

USER = "acpstack"


class NotInstalled(RuntimeError):
    """A program that a test or benchmark needs (PostgreSQL, HAProxy) is not installed here.
    The only reason a test that needs one may skip (tests/conftest.py)."""


class PostgresUnavailable(RuntimeError):
    """PostgreSQL is installed but could not be started or used (the message says why)."""


def find_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    return candidates[-1] if candidates else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run_as() -> tuple[list[str], int, int] | None:
    """The command prefix to run the server as an ordinary user when we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            runuser = shutil.which("runuser")
            if runuser is None:
                raise PostgresUnavailable("running as root and `runuser` is missing")
            return [runuser, "-u", name, "--"], entry.pw_uid, entry.pw_gid
    raise PostgresUnavailable("running as root and there is no `postgres` or `nobody` user")


class LocalPostgres(Service):
    """`with LocalPostgres() as pg: url = pg.create_database("t1")`.

    `settings` are extra server settings (`-c name=value`), e.g. ``{"fsync": "off"}``.
    """

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.settings = dict(settings or {})
        self.port = 0
        self.base: Path | None = None
        self._prefix: list[str] = []
        self._started = False

    # -- paths ---------------------------------------------------------------------

    @property
    def socket_dir(self) -> Path:
        assert self.base is not None
        return self.base / "sock"

    @property
    def data_dir(self) -> Path:
        assert self.base is not None
        return self.base / "data"

    def url(self, database: str = "postgres") -> str:
        """A libpq URL over the unix socket."""
        return f"postgresql://{USER}@/{database}?host={self.socket_dir}&port={self.port}"

    def tcp_url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    # -- life ----------------------------------------------------------------------

    def start(self) -> None:
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise NotInstalled(
                "PostgreSQL is not installed (initdb/pg_ctl not found; apt-get install postgresql)"
            )
        run_as = _run_as()
        self.base = Path(tempfile.mkdtemp(prefix="acpstack-pg-"))
        self.base.chmod(0o755)  # the server's user must reach its directories
        for sub in ("data", "sock"):
            (self.base / sub).mkdir(mode=0o700)
        if run_as is not None:
            self._prefix, uid, gid = run_as
            for sub in ("data", "sock"):
                os.chown(self.base / sub, uid, gid)
        log = self.base / "sock" / "server.log"
        self._run(
            [initdb, "-D", str(self.data_dir), "-U", USER, "-A", "trust", "-E", "UTF8"]
            + ["--locale=C", "--no-sync"],
            "initdb",
        )
        options = [f"-k {self.socket_dir}", "-c listen_addresses=127.0.0.1"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        for _attempt in range(5):
            self.port = free_port()
            start = [pg_ctl, "-D", str(self.data_dir), "-l", str(log), "-w", "-t", "60"]
            start += ["-o", " ".join([f"-p {self.port}", *options]), "start"]
            try:
                self._run(start, "pg_ctl start")
            except PostgresUnavailable as exc:
                problem = exc
                if "could not bind" not in self.log_tail():
                    break
                continue
            self._started = True
            return
        raise PostgresUnavailable(f"{problem}; server log: {self.log_tail()}")

    def _run(self, argv: list[str], what: str) -> None:
        done = subprocess.run(
            [*self._prefix, *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(self.base),
        )
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}"
            )

    def log_tail(self) -> str:
        if self.base is None:
            return ""
        with contextlib.suppress(OSError):
            return (self.base / "sock" / "server.log").read_text(errors="replace")[-1500:]
        return ""

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with psql (no Python driver needed); returns its output."""
        psql = find_bin("psql")
        if psql is None:
            raise NotInstalled("psql is not installed (apt-get install postgresql)")
        done = subprocess.run(
            [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.url(database)]
            + ["-c", sql],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql: {done.stderr.strip()}")
        return done.stdout.strip()

    def create_database(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def halt(self) -> None:
        """Stop the server as a crash would (`immediate`), keeping its data and port:
        `resume()` starts it again (an outage, for tests)."""
        pg_ctl = find_bin("pg_ctl")
        assert pg_ctl is not None and self._started
        self._run([pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "stop"], "stop")

    def resume(self) -> None:
        """Start a halted server again on the same port."""
        pg_ctl = find_bin("pg_ctl")
        assert pg_ctl is not None and self._started
        log = self.base / "sock" / "server.log" if self.base is not None else None
        options = [f"-p {self.port}", f"-k {self.socket_dir}", "-c listen_addresses=127.0.0.1"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        self._run(
            [pg_ctl, "-D", str(self.data_dir), "-l", str(log), "-w", "-t", "60"]
            + ["-o", " ".join(options), "start"],
            "pg_ctl start",
        )

    def stop(self) -> None:
        if self._started:
            self._started = False
            pg_ctl = find_bin("pg_ctl")
            assert pg_ctl is not None
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                self._run([pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "stop"], "stop")
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


def owner_key(url: str, session_id: str) -> int | None:
    """The presence key of the node that holds a session (PostgresSessionStore's lease)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT owner FROM acpstack_sessions WHERE session_id = %s", (session_id,)
        ).fetchone()
    return None if row is None else row[0]


def wait_for_release(url: str, key: int, timeout: float = 10) -> None:
    """Block until no process holds the advisory lock `key` (a dead node's presence ends
    when the server has dropped its connection): an event to wait on, not a poll."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET statement_timeout = {int(timeout * 1000)}")
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
