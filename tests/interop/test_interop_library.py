"""acpstack against the official SDKs, both ways, through the library API.

Their agents are driven by our ClientRuntime; our agent is driven by their clients.
Covered: initialize, session/new, a prompt with streamed updates, a permission request,
fs read/write and cancellation.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _foreign  # noqa: E402

import acpstack.events as events
from acpstack import spawn_agent  # noqa: E402
from acpstack.client import ClientRuntime  # noqa: E402
from acpstack.schema import v1 as acp  # noqa: E402

pytestmark = pytest.mark.timeout(180, func_only=True)
NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
OUR_AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "acpstack_agent.py")]
SIDES = [
    pytest.param("py", id="python-sdk"),
    pytest.param("ts", id="typescript-sdk", marks=NEEDS_NODE),
]


@pytest.fixture(scope="session")
def py_sdk() -> Path:
    return _foreign.python_sdk_python()


@pytest.fixture(scope="session")
def node_sdk() -> Path:
    node_dir = _foreign.node_sdk_dir()
    assert node_dir is not None, "node is on PATH but npm is not"
    return node_dir


def their_agent(kind: str, request: pytest.FixtureRequest) -> list[str]:
    request.getfixturevalue("py_sdk" if kind == "py" else "node_sdk")
    return _foreign.py_sdk_agent_cmd() if kind == "py" else _foreign.ts_agent_cmd()


def their_client(kind: str, request: pytest.FixtureRequest, *options: str) -> dict[str, Any]:
    request.getfixturevalue("py_sdk" if kind == "py" else "node_sdk")
    factory = _foreign.py_sdk_client_cmd if kind == "py" else _foreign.ts_client_cmd
    proc = subprocess.run(factory(OUR_AGENT, *options), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def texts(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk"
    ]


# -- their agents, our client -------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    def __call__(self, session_id: str, update: Any) -> None:
        self.updates.append(update)


async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
    return next(o for o in request.options if o.kind == "allow_once")


async def reject(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
    return next(o for o in request.options if o.kind == "reject_once")


class Signal:
    """Set on every update the client receives, to wait on a condition without a timer."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def on_update(self, session_id: str, update: object) -> None:
        self.event.set()

    async def until(self, condition: Callable[[], bool], timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not condition():
                self.event.clear()
                await self.event.wait()


def agent_text(runtime: ClientRuntime, sid: str) -> str:
    message = runtime.sessions[sid].state.last_agent_message
    return message.text if message else ""


@pytest.mark.parametrize("kind", SIDES)
async def test_our_client_drives_their_agent(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    recorder = Recorder()
    runtime = ClientRuntime(ask=allow, on_update=recorder)
    async with spawn_agent(their_agent(kind, request), runtime):
        init = await runtime.initialize(timeout=60)
        assert init.protocol_version == 1
        assert isinstance(init.agent_info, acp.Implementation) and init.agent_info.name.endswith(
            "sdk-agent"
        )
        sid = (await runtime.new_session(str(tmp_path))).session_id

        result = await runtime.prompt(sid, "stream 200")
        assert result.stop_reason == "end_turn"
        chunks = [
            u.content.text for u in recorder.updates if isinstance(u, events.AgentMessageChunk)
        ]
        assert chunks == [f"chunk-{i:08d} " for i in range(1, 201)]

        await runtime.prompt(sid, "permission")
        assert agent_text(runtime, sid) == "permission: selected allow"
        assert runtime.sessions[sid].state.tool_calls["call-1"].status == "completed"

        (tmp_path / "in.txt").write_text("line one\nline two\n")
        await runtime.prompt(sid, f"read {tmp_path / 'in.txt'}")
        assert agent_text(runtime, sid) == "read: line one\nline two\n"
        await runtime.prompt(sid, f"write {tmp_path / 'out' / 'new.txt'} written by the agent")
        assert (tmp_path / "out" / "new.txt").read_text() == "written by the agent"
        await runtime.prompt(sid, f"read {tmp_path / 'missing.txt'}")
        assert "-32002" in agent_text(runtime, sid)
        await runtime.prompt(sid, "read /etc/hostname")
        assert "-32005" in agent_text(runtime, sid)  # outside the workspace: refused by our client


@pytest.mark.parametrize("kind", SIDES)
async def test_our_client_rejects_and_cancels_their_agent(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    waiting = Signal()
    runtime = ClientRuntime(ask=reject, on_update=waiting.on_update)
    async with spawn_agent(their_agent(kind, request), runtime):
        await runtime.initialize(timeout=60)
        sid = (await runtime.new_session(str(tmp_path))).session_id
        await runtime.prompt(sid, "permission")
        assert agent_text(runtime, sid) == "permission: selected reject"

        turn = asyncio.create_task(runtime.prompt(sid, "wait"))
        await waiting.until(lambda: agent_text(runtime, sid) == "waiting")
        await runtime.cancel(sid)
        result = await asyncio.wait_for(turn, 30)
        assert result.stop_reason == "cancelled"


@pytest.mark.parametrize("kind", SIDES)
async def test_cancel_answers_their_pending_permission(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    asked = asyncio.Event()

    async def hold(req: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        asked.set()
        await asyncio.Event().wait()
        return None

    runtime = ClientRuntime(ask=hold)
    async with spawn_agent(their_agent(kind, request), runtime):
        await runtime.initialize(timeout=60)
        sid = (await runtime.new_session(str(tmp_path))).session_id
        turn = asyncio.create_task(runtime.prompt(sid, "permission"))
        await asyncio.wait_for(asked.wait(), 30)
        await runtime.cancel(sid)
        result = await asyncio.wait_for(turn, 30)
        assert result.stop_reason == "cancelled"
        assert agent_text(runtime, sid) == "permission: cancelled"


# -- their clients, our agent ---------------------------------------------------------------


@pytest.mark.parametrize("kind", SIDES)
def test_their_client_drives_our_agent(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    (tmp_path / "in.txt").write_text("hello from disk\n")
    report = their_client(
        kind,
        request,
        "--cwd",
        str(tmp_path),
        "--permission",
        "allow",
        "--prompt",
        "stream 100",
        "--prompt",
        "permission",
        "--prompt",
        f"read {tmp_path / 'in.txt'}",
        "--prompt",
        f"write {tmp_path / 'out.txt'} from acpstack",
    )
    assert report["initialize"]["protocolVersion"] == 1
    assert report["initialize"]["agentInfo"]["name"] == "acpstack-agent"
    stream, permission, read, write = report["turns"]
    assert [t["stopReason"] for t in report["turns"]] == ["end_turn"] * 4
    assert texts(stream["updates"]) == [f"chunk-{i:08d} " for i in range(1, 101)]
    assert "permission: selected allow" in texts(permission["updates"])
    assert report["permissionRequests"][0]["options"][0]["kind"] == "allow_once"
    assert texts(read["updates"]) == ["read: hello from disk\n"]
    assert (tmp_path / "out.txt").read_text() == "from acpstack"
    assert report["fsWrites"] == [{"path": str(tmp_path / "out.txt"), "content": "from acpstack"}]
    assert texts(write["updates"]) == [f"wrote: {tmp_path / 'out.txt'}"]


@pytest.mark.parametrize("kind", SIDES)
def test_their_client_rejects_and_cancels_our_agent(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    report = their_client(
        kind, request, "--cwd", str(tmp_path), "--permission", "reject", "--prompt", "permission"
    )
    assert "permission: selected reject" in texts(report["turns"][0]["updates"])
    cancel = their_client(kind, request, "--cwd", str(tmp_path), "--scenario", "cancel")
    turn = cancel["turns"][0]
    assert turn["stopReason"] == "cancelled"
    assert texts(turn["updates"]) == ["waiting"]
    assert cancel["lateUpdates"] == []
    held = their_client(
        kind,
        request,
        "--cwd",
        str(tmp_path),
        "--scenario",
        "cancel",
        "--permission",
        "hold",
        "--prompt",
        "permission",
    )
    assert held["turns"][0]["stopReason"] == "cancelled"
