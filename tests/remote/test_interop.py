"""Remote interop, both directions and both profiles, over real sockets on 127.0.0.1:
the official TypeScript SDK (2.4.0) and Python SDK (0.12.1) servers driven by our client,
and our server (`acpstack serve`) driven by their clients. Every run has a permission
request and a cancellation mid-turn.

The SDKs are installed by tests/interop/_foreign.py into .cache/interop (npm `ws` and the
Python SDK's `http` extra included); without a registry the tests skip and say so.
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _serving import SCRIPTED, serve_process

import acpstack.events as events
from acpstack.client import ClientRuntime, connect_http, connect_remote
from acpstack.schema import v1 as acp
from acpstack.transports import HttpClientTransport

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import _foreign  # noqa: E402

pytestmark = pytest.mark.timeout(120, func_only=True)
NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
PROFILES = ["http", "ws"]


def _installed(kind: str) -> None:
    try:
        if kind == "ts":
            assert _foreign.node_sdk_dir() is not None, "node is on PATH but npm is not"
        else:
            _foreign.python_sdk_python()
    except _foreign.ForeignInstallError as exc:
        pytest.skip(
            f"the {kind} SDK could not be installed (is the package registry reachable?): {str(exc)[:300]}"
        )


def _server_argv(kind: str) -> list[str]:
    _installed(kind)
    return (
        _foreign.ts_remote_cmd("ts_server.mjs", "0")
        if kind == "ts"
        else _foreign.py_sdk_remote_cmd("py_remote_server.py", "0")
    )


def _client_argv(kind: str, url: str) -> list[str]:
    _installed(kind)
    return (
        _foreign.ts_remote_cmd("ts_remote_client.mjs", url)
        if kind == "ts"
        else _foreign.py_sdk_remote_cmd("py_remote_client.py", url)
    )


@pytest.fixture
def foreign_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A foreign SDK's server on 127.0.0.1; yields its http:// URL."""
    proc = subprocess.Popen(
        _server_argv(request.param),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield f"http://127.0.0.1:{_ready_port(proc)}/acp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            assert pipe is not None
            pipe.close()


def _ready_port(proc: subprocess.Popen[bytes]) -> int:
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    line = b""
    try:
        while not line.endswith(b"\n"):
            if not selector.select(max(0.0, deadline - time.monotonic())):
                raise AssertionError("the foreign server did not start within 60 s")
            byte = os.read(proc.stdout.fileno(), 1)  # unbuffered: select() must see what is left
            if not byte:
                stderr = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"the foreign server exited {proc.wait()}: {stderr}")
            line += byte
    finally:
        selector.close()
    assert line.startswith(b"READY "), line
    return int(line.split()[1])


# What each scripted agent says, so one test fits them all.
EXPECTED_PERMISSION_TEXT = {
    "ts": "outcome: allow",
    "py": "permission: selected allow",
    "acpstack": "outcome: allow",
}


class Recorder:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.asked: list[acp.RequestPermissionRequest] = []
        self.first_chunk = asyncio.Event()

        async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
            self.asked.append(request)
            return next(o for o in request.options if o.kind == "allow_once")

        self.runtime = ClientRuntime(ask=ask, on_update=self._update)

    def _update(self, _session: str, update: Any) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            self.texts.append(update.content.text)
            self.first_chunk.set()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(
    "foreign_server",
    [pytest.param("ts", marks=NEEDS_NODE, id="ts-server"), pytest.param("py", id="py-server")],
    indirect=True,
)
async def test_our_client_drives_a_foreign_server(
    foreign_server: str, profile: str, request: pytest.FixtureRequest
) -> None:
    kind = request.node.callspec.params["foreign_server"]
    url = foreign_server if profile == "http" else "ws" + foreign_server[4:]
    rec = Recorder()
    async with connect_remote(url, rec.runtime):
        init = await asyncio.wait_for(rec.runtime.initialize(), 30)
        assert init.protocol_version == 1
        session = (await rec.runtime.new_session("/tmp")).session_id
        result = await asyncio.wait_for(rec.runtime.prompt(session, "permission"), 30)
        assert result.stop_reason == "end_turn" and len(rec.asked) == 1
        assert EXPECTED_PERMISSION_TEXT[kind] in rec.texts
        rec.texts.clear()
        assert (
            await asyncio.wait_for(rec.runtime.prompt(session, "stream 20"), 30)
        ).stop_reason == "end_turn"
        assert len(rec.texts) == 20
        rec.first_chunk.clear()
        turn = asyncio.ensure_future(rec.runtime.prompt(session, "wait"))
        await asyncio.wait_for(rec.first_chunk.wait(), 30)
        await rec.runtime.cancel(session)
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"


@pytest.mark.parametrize(
    "foreign_server",
    [pytest.param("ts", marks=NEEDS_NODE, id="ts-server"), pytest.param("py", id="py-server")],
    indirect=True,
)
async def test_asking_a_foreign_server_for_one_stream_falls_back_to_a_stream_per_session(
    foreign_server: str,
) -> None:
    """`Acp-One-Stream` is acpstack's: a server that does not answer it gets the usual
    stream per session, and the turn works as without asking."""
    rec = Recorder()
    async with connect_http(foreign_server, rec.runtime, one_stream=True) as conn:
        await asyncio.wait_for(rec.runtime.initialize(), 30)
        assert isinstance(conn.transport, HttpClientTransport)
        assert conn.transport.one_stream is False
        session = (await rec.runtime.new_session("/tmp")).session_id
        result = await asyncio.wait_for(rec.runtime.prompt(session, "stream 20"), 30)
        assert result.stop_reason == "end_turn" and len(rec.texts) == 20


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("kind", [pytest.param("ts", marks=NEEDS_NODE), "py"])
def test_a_foreign_client_drives_acpstack_serve(kind: str, profile: str) -> None:
    with serve_process("--agent", SCRIPTED) as served:
        url = served.url if profile == "http" else "ws" + served.url[4:]
        argv = _client_argv(kind, url)
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, (
            f"{argv} exited {done.returncode}\n{done.stderr}\n{done.stdout}"
        )
        report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["initialize"]["agentInfo"]["name"] == "acpstack-scripted"
    permission, stream, wait = report["turns"]
    assert permission == {
        "prompt": "permission",
        "stopReason": "end_turn",
        "texts": ["asking", "outcome: allow"],
    }
    assert stream["stopReason"] == "end_turn" and stream["texts"] == [f"{i:08d}" for i in range(20)]
    assert wait["stopReason"] == "cancelled" and wait["texts"][0] == "waiting"
    assert report["permissionRequests"] == 1
