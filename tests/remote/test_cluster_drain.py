"""A server draining behind HAProxy (examples/deploy/haproxy.cfg as it is, tools/cluster):
SIGTERM to the server that runs a long turn; new clients that arrive meanwhile all get
a connection, on the other servers (its `/readyz` says 404, and an `initialize` it
refuses with 503 before HAProxy noticed is retried elsewhere), while the turn it holds
goes on through HAProxy to its end."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx
import pytest

from acpstack.client import ClientRuntime, connect_remote
from tools.cluster._cluster import Cluster
from tools.cluster._postgres import NotInstalled

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]
LONG = 1000  # chunks of the long turn, 5 ms apart: it outlasts the newcomers' arrival
NEWCOMERS = 6


async def test_new_clients_avoid_a_draining_server_and_its_turn_finishes(
    not_installed: Any,
) -> None:
    with contextlib.ExitStack() as stack:
        try:
            cluster = stack.enter_context(Cluster(3, env={"ACPSTACK_CHUNK_DELAY": "0.005"}))
        except NotInstalled as exc:
            not_installed(exc)
        await drain_one(cluster)


async def drain_one(cluster: Cluster) -> None:
    first = ClientRuntime()
    async with connect_remote(cluster.url, first):
        await first.initialize()
        sid = (await first.new_session("/tmp")).session_id
        turn = asyncio.ensure_future(first.prompt(sid, f"turn 0 chunks {LONG}", timeout=120))
        draining = await server_of(cluster, sid)
        cluster.terminate(draining)
        await until_draining(cluster.nodes[draining].port)
        # together, and each holds its connection until all have theirs: the least
        # loaded server is soon the draining one, with its single connection
        everyone = asyncio.Barrier(NEWCOMERS)
        opened = await asyncio.gather(
            *(short_turn(cluster.url, everyone) for _ in range(NEWCOMERS))
        )
        assert (await turn).stop_reason == "end_turn"  # held connections still reach it
    begun = cluster.turns_begun()
    elsewhere = {
        s for name, rows in begun.items() for s, _, _ in rows if name != Cluster.name(draining)
    }
    assert set(opened) <= elsewhere, (opened, begun)
    said = cluster.haproxy_said()
    assert (
        f"{Cluster.name(draining)} is stopping" in said
        or f"{Cluster.name(draining)} is DOWN" in said
    ), said


async def short_turn(url: str, everyone: asyncio.Barrier) -> str:
    runtime = ClientRuntime()
    async with connect_remote(url, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session("/tmp")).session_id
        await everyone.wait()
        assert (await runtime.prompt(sid, "turn 0 chunks 2", timeout=60)).stop_reason == "end_turn"
        return sid


async def until_draining(port: int, timeout: float = 30) -> None:
    """Until the server says it drains (`/readyz` 404): HAProxy has not noticed yet."""
    async with httpx.AsyncClient(timeout=10) as http, asyncio.timeout(timeout):
        while (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code != 404:
            await asyncio.sleep(0.01)  # the signal is handled in another process


async def server_of(cluster: Cluster, sid: str, timeout: float = 30) -> int:
    """Which server began the session's turn (its turn log, written by another process:
    read again until the line is there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for index in range(len(cluster.nodes)):
            if any(s == sid for s, _, _ in cluster.turns_begun()[Cluster.name(index)]):
                return index
        await asyncio.sleep(0.05)  # another process's file: nothing to await
    raise AssertionError(f"no server began session {sid}'s turn in {timeout} s")
