"""Protocol v2 with peers nobody here wrote: the TypeScript SDK 2.4.0's experimental v2 API
(its v2 agent, its v1+v2 protocol router, its v2 client) and v1-only agents (the TS SDK's
v1 agent, the official Python SDK's agent). Every pair negotiates and completes a turn.

Peers: tests/interop/peers/ts_v2_agent.mjs (--mode v2|router|router-v1|router-v2),
ts_v2_client.mjs, and the v1 peers of test_foreign_peers.py. Real processes, real pipes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _foreign  # noqa: E402

pytestmark = [
    pytest.mark.timeout(120, func_only=True),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]
V2_AGENT = _foreign.PEERS_DIR / "ts_v2_agent.mjs"
V2_CLIENT = _foreign.PEERS_DIR / "ts_v2_client.mjs"
COMMAND_AGENT = Path(__file__).resolve().parents[1] / "v2" / "peers" / "command_agent.py"


@pytest.fixture(scope="module")
def node_ready() -> Path:
    node_dir = _foreign.node_sdk_dir()
    assert node_dir is not None, "node is on PATH but npm is not"
    return node_dir


def ts_v2_agent(mode: str) -> list[str]:
    return [_foreign._node(), str(_foreign._node_script(V2_AGENT)), "--mode", mode]


async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
    return next(o for o in request.options if o.kind == "allow_once")


@asynccontextmanager
async def ours(agent: list[str], version: int, **env: str) -> AsyncIterator[ClientRuntime]:
    """Our ClientRuntime asking for `version`, connected and initialized."""
    runtime = ClientRuntime(ask=allow, protocol_version=version)
    async with spawn_agent(agent, runtime, env={**os.environ, **env}):
        await runtime.initialize()
        yield runtime


async def one_turn(runtime: ClientRuntime, cwd: Path, text: str) -> tuple[str, str]:
    sid = (await runtime.new_session(str(cwd))).session_id
    result = await runtime.prompt(sid, text, timeout=30)
    last = runtime.sessions[sid].state.last_agent_message
    return result.stop_reason, last.text if last is not None else ""


# -- our client, their v2 agent ------------------------------------------------------------


async def test_our_client_drives_their_v2_agent(node_ready: Path, tmp_path: Path) -> None:
    async with ours(ts_v2_agent("v2"), 2) as runtime:
        assert runtime.agent.protocol_version == 2
        assert runtime.initialize_result is not None
        assert runtime.initialize_result.agent_info == acp.Implementation(
            name="ts-sdk-v2-agent", title="TypeScript SDK v2 agent", version="2.4.0"
        )
        sid = (await runtime.new_session(str(tmp_path))).session_id
        state = runtime.sessions[sid].state
        assert (await runtime.prompt(sid, "stream 3", timeout=30)).stop_reason == "end_turn"
        assert state.messages[-1].text == "chunk-00000001 chunk-00000002 chunk-00000003 "
        # Their user-message echo is our prompt, by their id.
        user = [m for m in state.messages if m.speaker == "user"]
        assert [m.text for m in user] == ["stream 3"] and user[0].message_id
        # A permission through our policy, `requires_action` while it waits.
        assert (await runtime.prompt(sid, "permission", timeout=30)).stop_reason == "end_turn"
        assert state.messages[-1].text == "permission: allow"
        assert state.tool_calls["call-1"].status == "completed"
        # Their display terminal and structured diff, in our model.
        await runtime.prompt(sid, "terminal", timeout=30)
        output = runtime.terminal_snapshot(sid, "term-1")
        assert output is not None and output.output == "hello\n"
        assert output.exit_status is not None and output.exit_status.exit_code == 0
        assert isinstance(state.tool_calls["call-t"].content[0], acp.Terminal)
        await runtime.prompt(sid, "diff", timeout=30)
        (shown,) = state.tool_calls["call-d"].content  # kept as v2 sent it: a patch
        assert isinstance(shown, events.Diff) and isinstance(shown.patch, dict)
        assert "+new" in shown.patch["text"]
        # Cancel: their idle says cancelled.
        import asyncio

        waiting = asyncio.ensure_future(runtime.prompt(sid, "wait", timeout=30))
        seen = asyncio.Event()
        runtime.on_update = lambda s, u: seen.set()
        async with asyncio.timeout(10):
            while not (state.messages and state.messages[-1].text == "waiting"):
                seen.clear()
                await seen.wait()
        await runtime.cancel(sid)
        assert (await waiting).stop_reason == "cancelled"


@pytest.mark.parametrize(
    ("mode", "asked", "spoken", "said"),
    [
        ("router", 2, 2, "echo: hi"),
        ("router", 1, 1, "v1 echo: hi"),
        ("router-v2", 1, 2, "echo: hi"),  # -32022, then asked again for 2
        ("router-v1", 2, 1, "v1 echo: hi"),  # their downgrade of our v2 request
    ],
)
async def test_our_client_and_their_router(
    node_ready: Path, tmp_path: Path, mode: str, asked: int, spoken: int, said: str
) -> None:
    async with ours(ts_v2_agent(mode), asked) as runtime:
        assert runtime.agent.protocol_version == spoken
        assert await one_turn(runtime, tmp_path, "hi") == ("end_turn", said)


# -- our v2 client, v1-only agents ------------------------------------------------------------


async def test_our_v2_client_with_the_ts_v1_agent(node_ready: Path, tmp_path: Path) -> None:
    async with ours(_foreign.ts_agent_cmd(), 2) as runtime:
        assert runtime.agent.protocol_version == 1
        assert await one_turn(runtime, tmp_path, "hello") == ("end_turn", "echo: hello")


async def test_our_v2_client_with_the_python_sdk_agent(tmp_path: Path) -> None:
    _foreign.python_sdk_python()
    async with ours(_foreign.py_sdk_agent_cmd(), 2) as runtime:
        assert runtime.agent.protocol_version == 1
        assert await one_turn(runtime, tmp_path, "hello") == ("end_turn", "echo: hello")


# -- their v2 client, our agent; their v2 client, v1-only agents -------------------------------


def ts_v2_client(agent: list[str], cwd: Path, *options: str, **env: str) -> dict[str, Any]:
    argv = [_foreign._node(), str(_foreign._node_script(V2_CLIENT)), "--cwd", str(cwd)]
    proc = subprocess.run(
        [*argv, *options, "--", *agent],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def command_agent(db: Path, versions: str) -> tuple[list[str], dict[str, str]]:
    env = {"V2_AGENT_DB": str(db), "V2_AGENT_VERSIONS": versions}
    return [sys.executable, str(COMMAND_AGENT)], env


def test_their_v2_client_drives_acpstack_agent(node_ready: Path, tmp_path: Path) -> None:
    agent = [sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db")]
    report = ts_v2_client(agent, tmp_path, "--prompt", "/help", "--prompt", "/run echo hi")
    assert report["protocolVersion"] == 2 and not report["fallback"]
    assert report["initialize"]["info"]["name"] == "acpstack-agent"
    for turn in report["turns"]:
        assert turn["stopReason"] == "end_turn", turn
        kinds = [u["sessionUpdate"] for u in turn["updates"]]
        echo = next(u for u in turn["updates"] if u["sessionUpdate"] == "user_message")
        assert echo["messageId"] == turn["messageId"]
        assert kinds.count("state_update") >= 2 and "tool_call" not in kinds
    assert "/read FILE" in report["turns"][0]["text"]
    # `/run` asks first (their client allowed it), then runs in the agent (no client terminal).
    (asked,) = report["permissionRequests"]
    assert asked["title"] and asked["subject"]["type"] == "tool_call"
    assert "exited with code 0" in report["turns"][1]["text"]


def test_their_v2_client_and_our_permission_flow(node_ready: Path, tmp_path: Path) -> None:
    agent, env = command_agent(tmp_path / "s.db", "1,2")
    for choice, decision in (("allow", "allow"), ("reject", "reject")):
        report = ts_v2_client(
            agent, tmp_path, "--prompt", "permission", "--permission", choice, **env
        )
        (turn,) = report["turns"]
        assert turn["text"] == f"decision={decision}"
        states = [u["state"] for u in turn["updates"] if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "requires_action", "running", "idle"]


@pytest.mark.parametrize("what", ["tool", "terminal"])
def test_their_v2_client_cancels_a_command(node_ready: Path, tmp_path: Path, what: str) -> None:
    # The SDK's `session.cancelToolCall` / `cancelTerminal` (they send only what the agent
    # advertises) on a command our agent runs: it is killed, and the turn ends normally.
    agent, env = command_agent(tmp_path / "s.db", "1,2")
    report = ts_v2_client(agent, tmp_path, "--prompt", "run sleep 30", "--cancel", what, **env)
    (turn,) = report["turns"]
    (cancel,) = report["cancels"]
    method = "tool_call/cancel" if what == "tool" else "terminal/cancel"
    assert (cancel["method"], cancel.get("error")) == (method, None)
    assert (turn["stopReason"], turn["text"]) == ("end_turn", "cancelled signal=SIGTERM")
    statuses = [u["status"] for u in turn["updates"] if "status" in u]
    assert statuses[-1] == ("cancelled" if what == "tool" else "failed")
    exits = [u["exitStatus"] for u in turn["updates"] if "exitStatus" in u]
    assert exits == [{"signal": "SIGTERM"}]


@pytest.mark.parametrize("agent_kind", ["ts-router-v1", "acpstack-v1-only"])
def test_their_v2_client_falls_back_to_v1(
    node_ready: Path, tmp_path: Path, agent_kind: str
) -> None:
    # Their v2 client has no fallback of its own: answered 1, it fails, and the peer starts
    # the agent again with the SDK's v1 client (what the SDK leaves to its users).
    if agent_kind == "ts-router-v1":
        agent, env, said = ts_v2_agent("router-v1"), {}, "v1 echo: hello"
    else:
        agent, env = command_agent(tmp_path / "s.db", "1")
        said = "echo: hello"
    report = ts_v2_client(agent, tmp_path, "--fallback", "--prompt", "hello", **env)
    assert report["v2Error"]  # the v2 attempt failed on the v1 answer
    assert report["fallback"] and report["protocolVersion"] == 1
    (turn,) = report["turns"]
    assert (turn["text"], turn["stopReason"]) == (said, "end_turn")
