"""Protocol v2 `tool_call/cancel` and `terminal/cancel`: one tool call or one command of a
turn is cancelled, and the turn goes on.

Our agent (tests/v2/peers/command_agent.py) over real pipes: driven line by line (every
message it writes is checked against the official v2 JSON Schema) and by `ClientRuntime`.
`run sleep 30` runs the command as the agent's own subprocess (v2 has no client
terminals), shown as a display terminal that advertises cancel, as does its tool call.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acpstack import CapabilityError, RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _lines import Json, LineClient, command_agent, initialize_v2, invalid_v2_messages  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def allow_all(request: Json) -> Any:
    if request["method"] != "session/request_permission":
        raise LookupError(request["method"])
    return ALLOW


@asynccontextmanager
async def agent(tmp_path: Path, *, v2: bool = True) -> AsyncIterator[LineClient]:
    argv, environ = command_agent(tmp_path / "sessions.db")
    client = await LineClient.start(argv, environ, allow_all)
    try:
        yield client
        if v2:
            assert invalid_v2_messages(client) == []
    finally:
        await client.close()


def update_of(message: Json) -> Json:
    if message.get("method") != "session/update":
        return {}
    update: Json = message["params"]["update"]
    return update


def advertises_cancel(kind: str) -> Callable[[Json], bool]:
    def check(message: Json) -> bool:
        update = update_of(message)
        capabilities = update.get("capabilities") or {}
        return update.get("sessionUpdate") == kind and capabilities.get("cancel") is not None

    return check


def is_idle(message: Json) -> bool:
    return update_of(message).get("state") == "idle"


def children(parent: int) -> dict[int, list[str]]:
    """The processes whose parent is `parent`, with their argv."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent:
                argv = (entry / "cmdline").read_bytes().decode().split("\0")[:-1]
                found[int(entry.name)] = argv
        except (OSError, ValueError, IndexError):
            continue
    return found


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def v2_session(client: LineClient, cwd: Path) -> str:
    assert (await client.request("initialize", initialize_v2()))["result"]["protocolVersion"] == 2
    return str((await client.request("session/new", {"cwd": str(cwd)}))["result"]["sessionId"])


async def start_sleep(client: LineClient, sid: str) -> tuple[int, str, str, int]:
    """Prompt `run sleep 30`; once its tool call advertises cancel: (where its updates
    start, the tool call id, the terminal id, the pid of `sleep 30`)."""
    start = len(client.messages)
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "run sleep 30"}]}
    assert "result" in await client.request("session/prompt", prompt)
    terminal = update_of(await client.wait_for(advertises_cancel("terminal_update"), start=start))
    tool = update_of(await client.wait_for(advertises_cancel("tool_call_update"), start=start))
    terminal_id, tool_call_id = terminal["terminalId"], tool["toolCallId"]
    assert terminal["command"] == "sleep 30" and terminal["cwd"] == client_cwd(client)
    # The tool call shows the terminal (display only).
    assert tool["content"] == [{"type": "terminal", "terminalId": terminal_id}]
    (pid,) = [p for p, argv in children(client.proc.pid).items() if argv == ["sleep", "30"]]
    assert os.getpgid(pid) == pid  # its own process group
    return start, tool_call_id, terminal_id, pid


def client_cwd(client: LineClient) -> str:
    new = next(m for m in client.sent if m.get("method") == "session/new")
    return str(new["params"]["cwd"])


def said(updates: list[Json]) -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]


def tool_updates(updates: list[Json], tool_call_id: str) -> list[Json]:
    return [
        u
        for u in updates
        if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == tool_call_id
    ]


async def test_tool_call_cancel_kills_the_command(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        start, tool_call_id, terminal_id, pid = await start_sleep(client, sid)
        params = {"sessionId": sid, "toolCallId": tool_call_id}
        assert (await client.request("tool_call/cancel", params))["result"] == {}
        idle = update_of(await client.wait_for(is_idle, start=start))
        assert idle["stopReason"] == "end_turn"  # the turn went on to its end
        assert gone(pid)
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)  # and its process group
        updates = client.updates(sid, start)
        assert said(updates) == ["cancelled signal=SIGTERM"]  # the author saw it
        calls = tool_updates(updates, tool_call_id)
        statuses = [u["status"] for u in calls if "status" in u]
        # Final: cancelled (the author's later fail() does not change it).
        assert statuses[-1] == "cancelled" and "completed" not in statuses
        assert statuses.count("cancelled") == 2
        assert [u["capabilities"] for u in calls if "capabilities" in u] == [
            {"cancel": {}},
            None,
        ]
        terminals = [u for u in updates if u["sessionUpdate"] == "terminal_update"]
        assert terminals[-1] == {
            "sessionUpdate": "terminal_update",
            "terminalId": terminal_id,
            "exitStatus": {"signal": "SIGTERM"},
            "capabilities": None,
        }
        # Once final, it cannot be cancelled again; nor can its exited terminal.
        again = await client.request("tool_call/cancel", params)
        assert again["error"]["code"] == -32602
        assert again["error"]["data"] == {"toolCallId": tool_call_id}
        exited = {"sessionId": sid, "terminalId": terminal_id}
        assert (await client.request("terminal/cancel", exited))["error"]["code"] == -32602


async def test_terminal_cancel_kills_the_command(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        start, tool_call_id, terminal_id, pid = await start_sleep(client, sid)
        params = {"sessionId": sid, "terminalId": terminal_id}
        assert (await client.request("terminal/cancel", params))["result"] == {}
        idle = update_of(await client.wait_for(is_idle, start=start))
        assert idle["stopReason"] == "end_turn"
        assert gone(pid)
        updates = client.updates(sid, start)
        assert said(updates) == ["cancelled signal=SIGTERM"]
        exit_update = [u for u in updates if "exitStatus" in u]
        assert exit_update == [
            {
                "sessionUpdate": "terminal_update",
                "terminalId": terminal_id,
                "exitStatus": {"signal": "SIGTERM"},
                "capabilities": None,
            }
        ]
        # Cancelling the terminal does not cancel its tool call: the agent failed it.
        statuses = [u["status"] for u in tool_updates(updates, tool_call_id) if "status" in u]
        assert statuses[-1] == "failed" and "cancelled" not in statuses
        assert (await client.request("terminal/cancel", params))["error"]["code"] == -32602


async def test_an_authors_work_is_cancelled_in_its_scope(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        start = len(client.messages)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "work"}]}
        await client.request("session/prompt", prompt)
        tool = update_of(await client.wait_for(advertises_cancel("tool_call_update"), start=start))
        await client.wait_for(lambda m: "working" in said(client.updates(sid, start)))
        params = {"sessionId": sid, "toolCallId": tool["toolCallId"]}
        assert (await client.request("tool_call/cancel", params))["result"] == {}
        idle = update_of(await client.wait_for(is_idle, start=start))
        assert idle["stopReason"] == "end_turn"
        updates = client.updates(sid, start)
        assert said(updates) == ["working", "cleaned up", "cancelled=True"]
        statuses = [u["status"] for u in tool_updates(updates, tool["toolCallId"]) if "status" in u]
        assert statuses == ["in_progress", "cancelled", "cancelled"]


async def test_session_cancel_still_cancels_the_whole_turn(tmp_path: Path) -> None:
    # A cancellable command does not keep the turn's own cancellation from ending the turn.
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        start, tool_call_id, terminal_id, pid = await start_sleep(client, sid)
        await client.notify("session/cancel", {"sessionId": sid})
        idle = update_of(await client.wait_for(is_idle, start=start))
        assert idle["stopReason"] == "cancelled"
        assert gone(pid)
        updates = client.updates(sid, start)
        after = updates[updates.index(idle) :]
        assert after == [idle]  # nothing after the idle; the terminal exit came before it
        assert any(u.get("exitStatus") == {} for u in updates)
        params = {"sessionId": sid, "toolCallId": tool_call_id}
        assert (await client.request("tool_call/cancel", params))["error"]["code"] == -32602


async def test_unknown_ids(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        for method, key in (("tool_call/cancel", "toolCallId"), ("terminal/cancel", "terminalId")):
            error = (await client.request(method, {"sessionId": sid, key: "nope"}))["error"]
            assert (error["code"], error["data"]) == (-32602, {key: "nope"}), method
            error = (await client.request(method, {"sessionId": "nope", key: "x"}))["error"]
            assert (error["code"], error["data"]) == (-32002, {"sessionId": "nope"}), method
            missing = (await client.request(method, {"sessionId": sid}))["error"]
            assert missing["code"] == -32602, method


async def test_v1_is_unchanged(tmp_path: Path) -> None:
    async with agent(tmp_path, v2=False) as client:
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "run echo hi"}]}
        answer = await client.request("session/prompt", prompt)
        assert answer["result"]["stopReason"] == "end_turn"
        updates = client.updates(sid)
        assert said(updates) == ["exit=0 output=hi"]
        assert not any("capabilities" in u or u.get("_meta") for u in updates)
        assert {u["sessionUpdate"] for u in updates} <= {
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "available_commands_update",
        }
        params = {"sessionId": sid, "toolCallId": "x"}
        assert (await client.request("tool_call/cancel", params))["error"]["code"] == -32601


# -- ClientRuntime -----------------------------------------------------------------------


class Watcher(ClientRuntime):
    """Wakes `until` after every update (the state is updated before the callback)."""

    def __init__(self, **kwargs: Any) -> None:
        self.arrived = asyncio.Event()
        super().__init__(on_update=lambda sid, update: self.arrived.set(), **kwargs)

    async def until(self, condition: Callable[[], bool], timeout: float = 15) -> None:
        async with asyncio.timeout(timeout):
            while not condition():
                self.arrived.clear()
                await self.arrived.wait()


async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
    return next(o for o in request.options if o.kind == "allow_once")


@asynccontextmanager
async def runtime_with(tmp_path: Path, version: int = 2) -> AsyncIterator[Watcher]:
    argv, env = command_agent(tmp_path / "sessions.db")
    runtime = Watcher(ask=allow, protocol_version=version)
    async with spawn_agent(argv, runtime, env={**os.environ, **env}):
        await runtime.initialize()
        yield runtime


@pytest.mark.parametrize("what", ["tool_call", "terminal"])
async def test_client_runtime_cancels(tmp_path: Path, what: str) -> None:
    async with runtime_with(tmp_path) as runtime:
        sid = (await runtime.new_session(str(tmp_path))).session_id
        state = runtime.sessions[sid].state
        turn = asyncio.ensure_future(runtime.prompt(sid, "run sleep 30", timeout=30))
        try:
            await runtime.until(
                lambda: (
                    any(t.cancellable for t in state.tool_calls.values())
                    and any(t.cancellable for t in state.agent_terminals.values())
                )
            )
            (tool_call_id,) = state.tool_calls
            (terminal_id,) = state.agent_terminals
            assert state.agent_terminals[terminal_id].command == "sleep 30"
            if what == "tool_call":
                await runtime.cancel_tool_call(sid, tool_call_id)
            else:
                await runtime.cancel_terminal(sid, terminal_id)
            assert (await turn).stop_reason == "end_turn"
        finally:
            turn.cancel()
        tool, terminal = state.tool_calls[tool_call_id], state.agent_terminals[terminal_id]
        assert tool.status == ("cancelled" if what == "tool_call" else "failed")
        assert (terminal.exited, terminal.signal) == (True, "SIGTERM")
        assert not tool.cancellable and not terminal.cancellable
        assert state.last_agent_message is not None
        assert state.last_agent_message.text == "cancelled signal=SIGTERM"
        # No longer advertised (or never known): refused without asking the agent.
        with pytest.raises(CapabilityError, match="does not advertise cancel"):
            await runtime.cancel_tool_call(sid, tool_call_id)
        with pytest.raises(CapabilityError, match="does not advertise cancel"):
            await runtime.cancel_terminal(sid, terminal_id)
        with pytest.raises(CapabilityError):
            await runtime.cancel_tool_call(sid, "nope")


async def test_client_runtime_passes_on_the_agents_refusal(tmp_path: Path) -> None:
    # The state says cancellable, the agent says no (e.g. it finished meanwhile): -32602.
    async with runtime_with(tmp_path) as runtime:
        sid = (await runtime.new_session(str(tmp_path))).session_id
        state = runtime.sessions[sid].state
        await runtime.prompt(sid, "run echo done")
        (tool_call_id,) = state.tool_calls
        state.tool_calls[tool_call_id].cancellable = True  # (stale on purpose)
        with pytest.raises(RequestError) as caught:
            await runtime.cancel_tool_call(sid, tool_call_id)
        assert caught.value.code == -32602


async def test_client_runtime_on_v1_refuses(tmp_path: Path) -> None:
    async with runtime_with(tmp_path, version=1) as runtime:
        sid = (await runtime.new_session(str(tmp_path))).session_id
        with pytest.raises(CapabilityError, match="protocol v2 method"):
            await runtime.cancel_tool_call(sid, "x")
        with pytest.raises(CapabilityError, match="protocol v2 method"):
            await runtime.cancel_terminal(sid, "x")
