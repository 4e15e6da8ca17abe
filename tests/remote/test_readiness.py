"""`/healthz` (alive), `/readyz` (takes new connections) and the drain that SIGTERM starts,
against `AgentServer` on uvicorn over a real socket on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import signal
import threading

import httpx
import pytest
from _probe import INIT, Probe, prompt
from _serving import SCRIPTED, load_scripted, running, serve_process

from acpstack.server import AgentServer, ServerLimits

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


def base(url: str) -> str:
    return url.rsplit("/", 1)[0]


async def checks(url: str) -> tuple[int, int]:
    async with httpx.AsyncClient(timeout=10) as http:
        alive = await http.get(base(url) + "/healthz")
        ready = await http.get(base(url) + "/readyz")
    return alive.status_code, ready.status_code


async def test_readyz_follows_the_store_and_the_connection_count() -> None:
    store_answers = threading.Event()
    store_answers.set()

    def readiness() -> bool:
        if not store_answers.is_set():
            raise ConnectionError("the store is down")
        return True

    app = AgentServer(
        load_scripted().ScriptedAgent,
        limits=ServerLimits(max_connections=1),
        readiness=readiness,
    )
    async with running(app) as url:
        assert await checks(url) == (200, 200)
        store_answers.clear()
        assert await checks(url) == (200, 503)  # alive, but sends nobody the store's errors
        store_answers.set()
        probe = Probe(url)
        try:
            await probe.initialize()
            assert await checks(url) == (200, 404)  # full
            await probe.http.delete(url, headers={"Acp-Connection-Id": probe.connection_id})
            assert await checks(url) == (200, 200)
        finally:
            await probe.aclose()


async def test_a_readiness_check_that_hangs_is_not_ready() -> None:
    release = threading.Event()
    started = 0

    def hangs() -> bool:
        nonlocal started
        started += 1
        return release.wait(30)

    app = AgentServer(
        load_scripted().ScriptedAgent,
        limits=ServerLimits(readiness_timeout=0.2),
        readiness=hangs,
    )
    async with running(app) as url:
        try:
            for _ in range(3):
                assert await checks(url) == (200, 503)
            assert started == 1  # the later checks wait on the one that hangs
        finally:
            release.set()
        async with asyncio.timeout(10):
            while await checks(url) != (200, 200):  # the store answers again
                await asyncio.sleep(0.05)


async def test_a_drain_lets_the_running_turn_finish_and_refuses_newcomers() -> None:
    app = AgentServer(load_scripted().ScriptedAgent)
    drain = asyncio.Event()
    async with running(app, drain=drain) as url:
        probe = Probe(url)
        try:
            await probe.initialize()
            async with probe.stream() as events:
                session = await probe.new_session(events)
            async with probe.stream(session) as events:
                assert (await probe.post(prompt(2, session, "permission"))).status_code == 202
                asked = await events.until(
                    lambda m: m.get("method") == "session/request_permission"
                )
                drain.set()
                async with asyncio.timeout(10):
                    while not app.draining:
                        await asyncio.sleep(0.01)
                assert await checks(url) == (200, 404)  # draining
                newcomer = await probe.http.post(url, json=INIT)
                assert newcomer.status_code == 503
                assert app.connections  # the turn is still running: nothing closed
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked[-1]["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
                }
                assert (await probe.post(answer, session=session)).status_code == 202
                done = await events.until(lambda m: m.get("id") == 2)
                assert done[-1]["result"]["stopReason"] == "end_turn"
            async with asyncio.timeout(15):  # then the server closes everything and stops
                while app.connections:
                    await asyncio.sleep(0.01)
        finally:
            await probe.aclose()


async def test_a_drain_gives_up_on_a_turn_after_the_drain_timeout() -> None:
    app = AgentServer(load_scripted().ScriptedAgent, limits=ServerLimits(drain_timeout=0.5))
    probe = Probe("")
    async with running(app) as url:
        probe = Probe(url)
        try:
            await probe.initialize()
            async with probe.stream() as events:
                session = await probe.new_session(events)
            async with probe.stream(session) as events:
                assert (await probe.post(prompt(2, session, "wait"))).status_code == 202
                await events.next()  # "waiting": the turn runs until cancelled
                assert app.turns_running() == 1
                assert await app.drain() is False
                assert app.turns_running() == 1
        finally:
            await probe.aclose()


async def test_sigterm_drains_acpstack_serve() -> None:
    with serve_process("--agent", SCRIPTED) as served:
        url = served.url
        probe = Probe(url)
        try:
            await probe.initialize()
            async with probe.stream() as events:
                session = await probe.new_session(events)
            async with probe.stream(session) as events:
                assert (await probe.post(prompt(2, session, "permission"))).status_code == 202
                asked = await events.until(
                    lambda m: m.get("method") == "session/request_permission"
                )
                served.proc.send_signal(signal.SIGTERM)
                async with asyncio.timeout(10):
                    while await checks(url) != (200, 404):  # draining
                        await asyncio.sleep(0.05)
                assert (await probe.http.post(url, json=INIT)).status_code == 503
                assert served.proc.poll() is None  # the turn is still running
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked[-1]["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
                }
                assert (await probe.post(answer, session=session)).status_code == 202
                done = await events.until(lambda m: m.get("id") == 2)
                assert done[-1]["result"]["stopReason"] == "end_turn"
        finally:
            await probe.aclose()
        # it exits on its own once the turn is over, and cleanly: the drain answered SIGTERM
        assert await asyncio.to_thread(served.proc.wait, 20) == 0


async def test_a_drained_websocket_is_told_to_reconnect_with_1012() -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as url:
        async with connect("ws" + url[4:]) as ws:
            await ws.send(json.dumps(INIT))
            assert json.loads(await ws.recv())["id"] == 0
            # the application's own doing (uvicorn, stopping, would say 1012 too)
            assert await app.drain() is True
            await app.aclose()
            with pytest.raises(ConnectionClosed):
                async with asyncio.timeout(15):
                    while True:
                        await ws.recv()
            assert ws.close_code == 1012
