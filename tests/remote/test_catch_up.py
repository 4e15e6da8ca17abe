"""Delivery cursors across servers, with real parts: two `acpstack serve` processes on one
SQLite file, a client (`connect_remote(..., reconnect=True)`) reaching them through a TCP
proxy on 127.0.0.1. Part way through a turn the proxy drops what the first server sends
(lost in its socket buffers), the first server is SIGKILLed, and the proxy leads to the
second: the turn is lost (it was running on the dead server), but every update the dead
server had stored reaches the client from the second one, once and in order."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from _faulty import FaultyProxy
from _serving import running, serve_process

import acpstack.events as ev
from acpstack.agent import MemorySessionStore, SessionAgent, SessionStore, Turn, open_store
from acpstack.client import (
    ClientRuntime,
    Failover,
    FailoverEvent,
    connect_remote,
    is_connection_lost,
)
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer, ServerLimits
from acpstack.wire import RequestError
from tools.cluster._cluster import STREAM_AGENT

pytestmark = pytest.mark.timeout(120)


def stored_chunks(path: Path) -> int:
    """How many events the store file holds (all of them the one session's)."""
    with sqlite3.connect(path) as db:
        return int(db.execute("select coalesce(sum(n), 0) from events").fetchone()[0])


async def until(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Wait (polling what another process writes) until `predicate()` holds."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s: {what}") from None


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_updates_a_dead_server_stored_reach_the_client_from_the_next(
    scheme: str, tmp_path: Path
) -> None:
    store = tmp_path / "sessions.db"
    env = {"ACPSTACK_STORE": str(store), "ACPSTACK_CHUNK_DELAY": "0.01"}
    received: list[str] = []

    def on_update(_sid: str, update: object) -> None:
        if isinstance(update, ev.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            received.append(update.content.text)

    runtime = ClientRuntime(on_update=on_update)
    with (
        serve_process("--agent", STREAM_AGENT, env=env) as first,
        serve_process("--agent", STREAM_AGENT, env=env) as second,
    ):
        proxy = FaultyProxy(first.port)
        port = await proxy.start()
        url = f"{scheme}://127.0.0.1:{port}/acp"
        try:
            async with connect_remote(url, runtime, reconnect=True):
                await runtime.initialize()
                sid = (await runtime.new_session("/tmp")).session_id
                await runtime.prompt(sid, "turn 1 chunks 3")
                turn = asyncio.ensure_future(runtime.prompt(sid, "turn 2 chunks 400"))
                await until(lambda: len(received) >= 10, "ten chunks of turn 2")
                proxy.deafen()
                heard = len(received)
                # what the client will not hear: at least 20 more chunks stored
                before = stored_chunks(store)
                await until(lambda: stored_chunks(store) >= before + 20, "20 chunks unheard")
                os.kill(first.proc.pid, signal.SIGKILL)
                proxy.target_port = second.port  # the load balancer's next choice
                with pytest.raises(RequestError) as lost:
                    await turn
                assert is_connection_lost(lost.value), lost.value
                # Every chunk the dead server stored, once, in order: what the client had
                # heard, then what it missed, sent by the second server.
                turn_2 = [t for t in received if t.startswith("2.")]
                assert len(received) > heard + 19
                assert turn_2 == [f"2.{n:03d}\n" for n in range(len(turn_2))]
                with open_store(store) as stored:
                    assert turn_2 == [t for t in stored_texts(stored, sid) if t.startswith("2.")]
                await runtime.prompt(sid, "turn 3 chunks 3")
                assert received[-4:] == ["3.000\n", "3.001\n", "3.002\n", received[-1]]
                assert received[-1].startswith("3.end")
        finally:
            await proxy.aclose()


class Streamer(SessionAgent):
    """'stream N': N chunks "000".. , each after a short pause (a model producing text)."""

    async def prompt(self, turn: Turn) -> acp.StopReason:
        for n in range(int(turn.text.split()[1])):
            await turn.say(f"{n:03d}")
            await asyncio.sleep(0.002)
        return "end_turn"


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_past_the_replay_buffer_the_recorded_updates_still_arrive(scheme: str) -> None:
    """The server lives, but more was lost on the way than its replay buffer holds: the
    resume is refused (410), the client fails over to a new connection (on the same
    server), and what it missed comes from the store."""
    store = MemorySessionStore()
    received: list[str] = []

    def on_update(_sid: str, update: object) -> None:
        if isinstance(update, ev.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            received.append(update.content.text)

    events: list[FailoverEvent] = []
    runtime = ClientRuntime(on_update=on_update)
    server = AgentServer(lambda: Streamer(store=store), limits=ServerLimits(replay_bytes=1024))
    async with running(server) as url:
        proxy = FaultyProxy(int(url.rsplit(":", 1)[1].split("/")[0]))
        port = await proxy.start()
        try:
            policy = Failover(on_event=events.append, first_delay=0.01)
            async with connect_remote(
                f"{scheme}://127.0.0.1:{port}/acp", runtime, reconnect=policy
            ):
                await runtime.initialize()
                sid = (await runtime.new_session("/tmp")).session_id
                turn = asyncio.ensure_future(runtime.prompt(sid, "stream 300"))
                await until(lambda: len(received) >= 10, "ten chunks")
                proxy.deafen()
                heard = len(received)
                # 60 chunks (over 1 KiB of frames) written into the void
                await until(lambda: len(stored_texts(store, sid)) >= heard + 60, "60 more")
                proxy.reset_all()
                with pytest.raises(RequestError) as lost:
                    await turn  # it ran on the connection that was given up: not known
                assert is_connection_lost(lost.value), lost.value
                # Everything the turn recorded, once, in order: the whole turn when it ran
                # to its end (over WebSocket the old connection is let go of once its turn
                # ended), its first part when the client's goodbye to the old connection
                # (an HTTP DELETE) cancelled it first.
                stored = stored_texts(store, sid)
                assert len(stored) >= heard + 60
                assert received == stored == [f"{n:03d}" for n in range(len(stored))]
                assert (await runtime.prompt(sid, "stream 2")).stop_reason == "end_turn"
        finally:
            await proxy.aclose()
    assert [e.kind for e in events][:1] == ["lost"], events


def stored_texts(store: SessionStore, session_id: str) -> list[str]:
    """The text of every agent message chunk the store holds for the session, in order."""
    chunks = (
        msgspec.json.decode(e.payload) for e in store.events(session_id) if e.kind == "update"
    )
    return [c["content"]["text"] for c in chunks if c.get("sessionUpdate") == "agent_message_chunk"]
