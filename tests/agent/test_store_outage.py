"""A session store that goes away and comes back, under a real agent process.

SQLite on a disk that fills up (a small tmpfs, so these need root: CI runs as root) and
PostgreSQL stopped for a while: the turns that need the store end with a clear, retryable
error (`data.reason: "store_unavailable"`), the process keeps answering everything else,
nothing acknowledged before is lost, and storing resumes by itself once the store is back.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "session_agent.py")]


class Recorder(ClientRuntime):
    def __init__(self) -> None:
        self.texts: list[str] = []
        super().__init__(on_update=self._record)

    def _record(self, sid: str, update: Any) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            self.texts.append(update.content.text)


@asynccontextmanager
async def agent(location: str, client: ClientRuntime) -> AsyncIterator[None]:
    async with spawn_agent(AGENT, client, env={"SESSION_AGENT_DB": location}):
        await client.initialize()
        yield


def assert_store_unavailable(err: RequestError) -> None:
    assert err.code == -32603
    assert isinstance(err.data, dict)
    assert err.data.get("reason") == "store_unavailable"
    assert err.data.get("retryable") is True


@contextlib.contextmanager
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Fill the disk to the last byte; the filler file, to delete to free the space."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        for size in (65536, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * size)
    return filler


async def test_sqlite_on_a_full_disk_fails_turns_clearly_and_recovers(tmp_path: Path) -> None:
    with small_disk(tmp_path) as disk:
        client = Recorder()
        async with agent(str(disk / "s.db"), client):
            sid = (await client.new_session(str(tmp_path))).session_id
            await client.prompt(sid, "burst 200")
            acknowledged = list(client.texts)
            assert len(acknowledged) == 200

            filler = fill(disk)
            # A turn that needs the store fails clearly, twice (nothing sticks half-done).
            for _ in range(2):
                with pytest.raises(RequestError) as failed:
                    await client.prompt(sid, "burst 5000")
                assert_store_unavailable(failed.value)
            # Everything that does not write keeps working meanwhile.
            listed = await client.agent.session_list(acp.ListSessionsRequest())
            assert [s.session_id for s in listed.sessions] == [sid]

            filler.unlink()  # space again: the same process stores again, no restart
            client.texts.clear()
            await client.prompt(sid, "burst 50")
            assert client.texts == [f"{i:08d} chunk" for i in range(50)]

        # Nothing acknowledged was lost; what failed to store was never shown.
        second = Recorder()
        async with agent(str(disk / "s.db"), second):
            await second.load_session(sid, str(tmp_path))
            stored = second.texts
        assert stored[:200] == acknowledged
        assert stored[-50:] == [f"{i:08d} chunk" for i in range(50)]
        # What the failed turns stored before the disk was full, they never showed: any of
        # it is a prefix of a burst, in order, once.
        middle = stored[200:-50]
        assert middle == [f"{i:08d} chunk" for i in range(len(middle))]


@pytest.fixture
def own_postgres(not_installed: Any) -> Iterator[Any]:
    """A PostgreSQL server of this test's own, which it may stop and start."""
    from tools.cluster._postgres import LocalPostgres, NotInstalled

    server = LocalPostgres()
    try:
        server.start()
    except NotInstalled as exc:
        server.stop()
        not_installed(exc)
    try:
        yield server
    finally:
        server.stop()


async def test_postgres_outage_fails_turns_clearly_and_recovers(
    own_postgres: Any, tmp_path: Path
) -> None:
    url = own_postgres.create_database("outage")
    client = Recorder()
    async with agent(url, client):
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "burst 100")
        acknowledged = list(client.texts)

        own_postgres.halt()
        try:
            with pytest.raises(RequestError) as failed:
                await client.prompt(sid, "burst 100")
            assert_store_unavailable(failed.value)
            # A request that needs no store is answered meanwhile, at once.
            with pytest.raises(RequestError) as unknown:
                await client.agent.call("_acpstack/not_a_method", {}, timeout=5)
            assert unknown.value.code == -32601
        finally:
            own_postgres.resume()

        client.texts.clear()
        await client.prompt(sid, "burst 30")  # storing resumes without a restart
        assert client.texts == [f"{i:08d} chunk" for i in range(30)]

    second = Recorder()
    async with agent(url, second):
        await second.load_session(sid, str(tmp_path))
    assert second.texts[:100] == acknowledged
    assert second.texts[-30:] == [f"{i:08d} chunk" for i in range(30)]


def test_the_store_works_again_as_soon_as_postgresql_is_back(own_postgres: Any) -> None:
    """After an outage the connection pool retries with a growing back-off and lends
    nothing until its next try, seconds after the server is back: a call then connects
    by itself instead of failing (this made the first turn after an outage fail)."""
    from acpstack.agent import PostgresSessionStore, SessionRecord

    url = own_postgres.create_database("backoff")
    with PostgresSessionStore(url, connect_timeout=2) as store:
        store.create(SessionRecord("s", "/tmp"))
        own_postgres.halt()
        try:
            # A 16 s outage: the pool's tries (about 1, 3, 7 and 15 s after the first
            # failure) fail, and its next one is some 15 s after the server is back.
            ends = time.monotonic() + 16
            while time.monotonic() < ends:
                with pytest.raises(Exception):  # noqa: B017 - PoolTimeout or OperationalError
                    store.get("s")
        finally:
            own_postgres.resume()
        record = store.get("s")
        assert record is not None and record.session_id == "s"
        assert store.append_event("s", "update", b'{"x":1}') == 1
