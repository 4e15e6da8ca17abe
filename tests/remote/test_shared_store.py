"""Several `acpstack serve` processes on one PostgreSQL store (real processes, real
sockets on 127.0.0.1, a throwaway server from the `postgres_url` fixture): a session is
live on one server at a time, what a client sees while another holds it, the takeover
when the holder is killed; the health endpoint; a store that cannot be opened."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import httpx
import pytest
from _serving import SCRIPTED, running, serve_process

from acpstack.agent import SESSION_BUSY
from acpstack.client import ClientRuntime, connect_remote
from acpstack.server import AgentServer, ServerSecurity
from acpstack.wire import RequestError
from tools.cluster._postgres import free_port, owner_key, wait_for_release

pytestmark = pytest.mark.timeout(90)


def agent_texts(runtime: ClientRuntime, session_id: str) -> str:
    return "".join(m.text for m in runtime.sessions[session_id].state.messages)


async def test_a_session_is_live_on_one_server_at_a_time(postgres_url: str) -> None:
    with (
        serve_process("--store", postgres_url) as one,
        serve_process("--store", postgres_url) as two,
    ):
        first, second = ClientRuntime(), ClientRuntime()
        async with (
            connect_remote(one.url, first) as _a,
            connect_remote("ws" + two.url[4:], second) as _b,
        ):
            await first.initialize()
            await second.initialize()
            sid = (await first.new_session("/tmp")).session_id
            await first.prompt(sid, "/help")

            with pytest.raises(RequestError) as busy:
                await second.load_session(sid, "/tmp")
            assert busy.value.code == SESSION_BUSY == -32010
            assert busy.value.data == {"reason": "session_busy", "sessionId": sid}
            assert "live on another node" in busy.value.message
            with pytest.raises(RequestError) as busy_too:
                await second.resume_session(sid, "/tmp")
            assert busy_too.value.code == SESSION_BUSY

            await first.close_session(sid)  # the first server lets go
            await second.load_session(sid, "/tmp")  # the whole history comes along
            assert "/help" in agent_texts(second, sid)
            await second.prompt(sid, "/help")
            with pytest.raises(RequestError) as now_busy:  # and now the first one is refused
                await first.resume_session(sid, "/tmp")
            assert now_busy.value.code == SESSION_BUSY


async def test_a_server_killed_holding_a_session_gives_it_up_at_once(postgres_url: str) -> None:
    with (
        serve_process("--store", postgres_url) as one,
        serve_process("--store", postgres_url) as two,
    ):
        first, second = ClientRuntime(), ClientRuntime()
        async with connect_remote(one.url, first):
            await first.initialize()
            sid = (await first.new_session("/tmp")).session_id
            await first.prompt(sid, "/help")
            async with connect_remote(two.url, second):
                await second.initialize()
                with pytest.raises(RequestError):
                    await second.resume_session(sid, "/tmp")
                key = owner_key(postgres_url, sid)
                assert key is not None
                os.kill(one.proc.pid, signal.SIGKILL)
                assert one.proc.wait(timeout=20) == -signal.SIGKILL
                # No lease to wait out: the database ends the dead server's connection,
                # and its presence lock with it.
                wait_for_release(postgres_url, key)
                await second.load_session(sid, "/tmp")
                assert agent_texts(second, sid).count("/help") >= 1
                await second.prompt(sid, "/help")


async def test_the_health_endpoint_needs_no_token_and_tells_nothing() -> None:
    app = AgentServer(lambda: None, security=ServerSecurity(token="s3cret-token"))  # type: ignore[arg-type, return-value]
    async with running(app) as url:
        health = url.replace("/acp", "/healthz")
        async with httpx.AsyncClient() as http:
            ok = await http.get(health, headers={"Host": "evil.example"})
            assert (ok.status_code, ok.text) == (200, "ok\n")
            assert ok.headers["cache-control"] == "no-store"
            assert (await http.head(health)).status_code == 200
            assert (await http.post(health)).status_code == 405
            assert (await http.post(url, json={})).status_code == 401  # the rest still asks
    # While it shuts down, it says so (load balancers stop sending new connections).
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    await app.aclose()
    await app({"type": "http", "method": "GET", "path": "/healthz", "headers": []}, receive, send)
    assert sent[0]["status"] == 503


async def test_the_health_endpoint_can_be_switched_off() -> None:
    app = AgentServer(lambda: None, health_path=None)  # type: ignore[arg-type, return-value]
    async with running(app) as url, httpx.AsyncClient() as http:
        assert (await http.get(url.replace("/acp", "/healthz"))).status_code == 404


def test_serve_answers_health_checks() -> None:
    with serve_process("--agent", SCRIPTED, "--token", "tok-1234") as served:
        answer = httpx.get(f"http://127.0.0.1:{served.port}/healthz")
        assert (answer.status_code, answer.text) == (200, "ok\n")


@pytest.mark.parametrize("command", ["serve", "agent"])
def test_a_store_that_cannot_be_opened_is_one_line_without_the_password(command: str) -> None:
    url = f"postgresql://acp:pw-7f3e9a@127.0.0.1:{free_port()}/acp?connect_timeout=5"
    argv = [sys.executable, "-m", "acpstack", command, "--store", url]
    if command == "serve":
        argv += ["--port", "0"]
    done = subprocess.run(argv, input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "cannot open the session store postgresql://***@127.0.0.1:" in done.stderr
    assert "pw-7f3e9a" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


async def test_healthz_answers_while_the_session_store_hangs(postgres_url: str) -> None:
    """A store that hangs for real: another PostgreSQL session holds the acpstack tables
    locked. A `session/new` waits on it inside the server, `/readyz` says not ready (its
    check gives up on the store), and `/healthz` answers 200 all along: it waits on
    neither the store nor the agents. (No time is asserted: while the lock is held, a
    health check that waited on the store would not answer at all.)"""
    import asyncio

    import psycopg

    with serve_process("--store", postgres_url) as served:
        base = served.url.rsplit("/", 1)[0]
        runtime = ClientRuntime()
        async with connect_remote(served.url, runtime), httpx.AsyncClient(timeout=60) as http:
            await runtime.initialize()
            with psycopg.connect(postgres_url) as locker:
                locker.execute(
                    "LOCK TABLE acpstack_sessions, acpstack_events IN ACCESS EXCLUSIVE MODE"
                )
                opening = asyncio.ensure_future(runtime.new_session("/tmp"))
                await until_a_query_waits_on_a_lock(postgres_url)
                assert (await http.get(base + "/healthz")).status_code == 200
                ready = await http.get(base + "/readyz")
                assert (ready.status_code, ready.text) == (
                    503,
                    "not ready (the session store does not answer)\n",
                )
                assert (await http.get(base + "/healthz")).status_code == 200
                assert not opening.done()  # still waiting on the store: the lock is held
                locker.rollback()  # the store answers again
            assert (await opening).session_id
            async with asyncio.timeout(30):
                while (await http.get(base + "/readyz")).status_code != 200:
                    await asyncio.sleep(0.1)  # the server's next check: nothing to await here


async def until_a_query_waits_on_a_lock(url: str, timeout: float = 30) -> None:
    """Until some PostgreSQL session waits for a table lock (the server's, on ours)."""
    import asyncio

    import psycopg

    with psycopg.connect(url, autocommit=True) as watcher:
        async with asyncio.timeout(timeout):
            while not watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'relation'"
            ).fetchone()[0]:  # type: ignore[index]
                await asyncio.sleep(0.05)  # another process: nothing to await
