"""Our agent on protocol v2, over real pipes to a real agent process, line by line.

The client here is raw JSON lines (tests/v2/_lines.py), so every assertion is about what
is on the wire; every message the agent writes is also checked against the official v2
JSON Schema.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _lines import (  # noqa: E402
    Json,
    LineClient,
    command_agent,
    initialize_v2,
    invalid_v2_messages,
)

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def allow_all(request: Json) -> Any:
    if request["method"] != "session/request_permission":
        raise LookupError(request["method"])
    return ALLOW


@asynccontextmanager
async def agent(
    tmp_path: Path,
    versions: str = "1,2",
    answer: Any = allow_all,
    *,
    v2: bool = True,
    **env: str,
) -> AsyncIterator[LineClient]:
    """The command agent; on a v2 conversation (`v2`) everything it wrote must be valid v2."""
    argv, environ = command_agent(tmp_path / "sessions.db", versions, **env)
    client = await LineClient.start(argv, environ, answer)
    try:
        yield client
        if v2:
            assert invalid_v2_messages(client) == []
    finally:
        await client.close()


def said(updates: list[Json]) -> list[str]:
    """The text of the agent's message chunks."""
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]


async def v2_session(client: LineClient, cwd: Path) -> str:
    init = await client.request("initialize", initialize_v2())
    assert init["result"]["protocolVersion"] == 2
    new = await client.request("session/new", {"cwd": str(cwd)})
    return str(new["result"]["sessionId"])


async def turn(client: LineClient, sid: str, text: str) -> tuple[Json, list[Json]]:
    """Prompt, wait for the idle that ends the turn; the answer and the turn's updates."""
    start = len(client.messages)
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    answer = await client.request("session/prompt", prompt)
    await client.wait_for(
        lambda m: (
            m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle"
        ),
        start=start,
    )
    return answer, client.updates(sid, start)


@pytest.mark.parametrize(("requested", "answered"), [(2, 2), (1, 1), (3, 2), (65535, 2)], ids=str)
async def test_acpstack_agent_negotiates(tmp_path: Path, requested: int, answered: int) -> None:
    argv = [sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db")]
    client = await LineClient.start(argv)
    try:
        params: Json = initialize_v2(requested)
        if requested == 1:
            params = {"protocolVersion": 1, "clientCapabilities": {}}
        result = (await client.request("initialize", params))["result"]
        assert result["protocolVersion"] == answered
        if answered == 2:  # v2's shape: `info` and one `capabilities`
            assert result["info"]["name"] == "acpstack-agent"
            assert "session" in result["capabilities"]
            assert "agentCapabilities" not in result
        else:
            assert result["agentCapabilities"]["loadSession"] is True
            assert "info" not in result
    finally:
        await client.close()


async def test_no_version_fits(tmp_path: Path) -> None:
    # A v2-only agent and a v1 client: -32022 with what was asked and what is spoken; the
    # connection stays usable, and an initialize for 2 goes through.
    async with agent(tmp_path, "2") as client:
        error = (await client.request("initialize", {"protocolVersion": 1}))["error"]
        assert error["code"] == -32022
        assert error["data"] == {"requested": 1, "supported": [2]}
        refused = await client.request("session/new", {"cwd": str(tmp_path)})
        assert refused["error"]["code"] == -32600  # still not initialized
        assert (await client.request("initialize", initialize_v2()))["result"][
            "protocolVersion"
        ] == 2
    async with agent(tmp_path, "1,2", v2=False) as client:
        error = (await client.request("initialize", {"protocolVersion": 0}))["error"]
        assert error["data"] == {"requested": 0, "supported": [1, 2]}


async def test_a_v1_agent_answers_a_v2_client_in_v1(tmp_path: Path) -> None:
    async with agent(tmp_path, "1", v2=False) as client:
        caps = {"elicitation": {"form": {}}, "auth": {"terminal": {}}}
        init = await client.request("initialize", initialize_v2(capabilities=caps))
        assert init["result"]["protocolVersion"] == 1
        assert "agentCapabilities" in init["result"]
        # v1 from here on: session/load exists, auth/login does not.
        sid = (await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))[
            "result"
        ]["sessionId"]
        loaded = await client.request(
            "session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert "result" in loaded
        assert (await client.request("auth/login", {"methodId": "x"}))["error"]["code"] == -32601


async def test_a_whole_v2_turn(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        answer, updates = await turn(client, sid, "say hello there")
        message_id = answer["result"]["messageId"]
        kinds = [u["sessionUpdate"] for u in updates]
        # The prompt is acknowledged with the id of the user message the agent echoes.
        assert updates[0] == {
            "sessionUpdate": "user_message",
            "messageId": message_id,
            "content": [{"type": "text", "text": "say hello there"}],
        }
        assert updates[1] == {"sessionUpdate": "state_update", "state": "running"}
        assert updates[-1] == {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
        }
        chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
        assert chunks[0]["content"] == {"type": "text", "text": "hello there"}
        assert chunks[0]["messageId"] and chunks[0]["messageId"] != message_id
        thought = next(u for u in updates if u["sessionUpdate"] == "agent_thought_chunk")
        assert thought["messageId"]
        plan = next(u for u in updates if u["sessionUpdate"] == "plan_update")
        assert plan["plan"]["type"] == "items" and plan["plan"]["planId"]
        assert plan["plan"]["entries"][0]["status"] == "completed"
        assert "plan" not in kinds and "tool_call" not in kinds  # v1's, gone in v2
        # The answer came before the turn's end.
        answer_at = client.messages.index(answer)
        idle_at = next(
            i
            for i, m in enumerate(client.messages)
            if m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle"
        )
        assert answer_at < idle_at


async def test_permission_reports_requires_action(tmp_path: Path) -> None:
    asked: list[Json] = []

    def answer(request: Json) -> Any:
        asked.append(request["params"])
        return allow_all(request)

    async with agent(tmp_path, answer=answer) as client:
        sid = await v2_session(client, tmp_path)
        _, updates = await turn(client, sid, "permission")
        created = next(u for u in updates if u["sessionUpdate"] == "tool_call_update")
        assert created["title"] == "Edit a file" and created["status"] == "pending"
        tool_id = created["toolCallId"]
        states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "requires_action", "running", "idle"]
        (request,) = asked
        assert request["title"] == "Edit a file"
        assert request["subject"]["type"] == "tool_call"
        assert request["subject"]["toolCall"]["toolCallId"] == tool_id
        final = [u for u in updates if u.get("toolCallId") == tool_id][-1]
        assert final["status"] == "completed"
        assert said(updates) == ["decision=allow"]


async def test_a_client_without_a_permission_handler_refuses(tmp_path: Path) -> None:
    # Every request of the agent is answered -32601 (no handler): a refusal, and the turn
    # goes on from requires_action to running and ends normally.
    async with agent(tmp_path, answer=None) as client:
        sid = await v2_session(client, tmp_path)
        _, updates = await turn(client, sid, "permission")
        states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "requires_action", "running", "idle"]
        assert updates[-1]["stopReason"] == "end_turn"
        assert said(updates) == ["decision=reject"]
        tool_id = next(u for u in updates if u["sessionUpdate"] == "tool_call_update")["toolCallId"]
        final = [u for u in updates if u.get("toolCallId") == tool_id][-1]
        assert final["status"] == "failed"


async def test_cancel_ends_the_turn_idle_cancelled(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        start = len(client.messages)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}
        await client.request("session/prompt", prompt)
        await client.wait_for(lambda m: said(client.updates(sid, start)) == ["waiting"])
        await client.notify("session/cancel", {"sessionId": sid})
        idle = await client.wait_for(
            lambda m: m.get("params", {}).get("update", {}).get("state") == "idle", start=start
        )
        assert idle["params"]["update"]["stopReason"] == "cancelled"
        # The session takes the next prompt.
        _, updates = await turn(client, sid, "say again")
        assert updates[-1]["stopReason"] == "end_turn"


async def test_a_failed_turn_ends_idle_with_the_error(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        answer, updates = await turn(client, sid, "fail")
        assert "messageId" in answer["result"]  # the prompt itself was accepted
        assert updates[-1] == {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {
                "code": -32099,
                "message": "the model is unavailable",
                "data": {"reason": "model_error"},
            },
        }
        _, updates = await turn(client, sid, "crash")
        error = updates[-1]["error"]
        assert error["code"] == -32603 and error["message"] == "Internal error"
        assert set(error["data"]) == {"correlationId"}  # the details stay in the log


async def test_resume_replays_from_the_start(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        answer, live = await turn(client, sid, "permission")
        prompt_id = answer["result"]["messageId"]
    async with agent(tmp_path) as client:
        await client.request("initialize", initialize_v2())
        start = len(client.messages)
        params = {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "start"}}
        resumed = await client.request("session/resume", params)
        assert resumed["result"]["configOptions"][0]["configId"] == "mode"
        replayed = client.updates(sid, start)
        # The history, then the state snapshot, all before the answer.
        assert replayed[0] == {
            "sessionUpdate": "user_message_chunk",
            "messageId": prompt_id,
            "content": {"type": "text", "text": "permission"},
        }
        assert replayed[-1] == {"sessionUpdate": "state_update", "state": "idle"}
        history = [u for u in live if u["sessionUpdate"] not in ("state_update", "user_message")]
        assert replayed[1:-1] == history
        assert all(
            client.messages.index(m) < client.messages.index(resumed)
            for m in client.messages[start:-1]
        )
        # Without replayFrom: only the snapshot.
        start = len(client.messages)
        await client.request("session/resume", {"sessionId": sid, "cwd": str(tmp_path)})
        assert client.updates(sid, start) == [{"sessionUpdate": "state_update", "state": "idle"}]
        # A cursor this agent does not know: refused, not silently resumed without replay.
        params["replayFrom"] = {"type": "_from_message", "messageId": "x"}
        refused = await client.request("session/resume", params)
        assert refused["error"]["code"] == -32602


async def test_a_v1_session_replays_to_a_v2_client(tmp_path: Path) -> None:
    # Recorded by a v1 client (tool_call, plan, chunks without ids), replayed in v2's shape.
    async with agent(tmp_path, v2=False) as client:
        await client.request("initialize", {"protocolVersion": 1})
        new = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        await client.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "permission"}]}
        )
        await client.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "say hi"}]}
        )
        v1 = [u["sessionUpdate"] for u in client.updates(sid)]
        assert "tool_call" in v1 and "plan" in v1
    async with agent(tmp_path) as client:
        await client.request("initialize", initialize_v2())
        params = {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "start"}}
        await client.request("session/resume", params)
        kinds = [u["sessionUpdate"] for u in client.updates(sid)]
        assert "tool_call" not in kinds and "plan" not in kinds
        assert "tool_call_update" in kinds and "plan_update" in kinds
        assert kinds.count("current_mode_update") == 0


async def test_v2_session_loads_on_v1(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        await turn(client, sid, "say from v2")
    async with agent(tmp_path, v2=False) as client:
        await client.request("initialize", {"protocolVersion": 1})
        start = len(client.messages)
        params = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        await client.request("session/load", params)
        replayed = client.updates(sid, start)
        assert replayed[0]["content"]["text"] == "say from v2"
        assert said(replayed) == ["from v2"]


async def test_what_v2_removed_or_renamed(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        for method, params in (
            ("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}),
            ("session/set_mode", {"sessionId": sid, "modeId": "ask"}),
            ("authenticate", {"methodId": "x"}),
        ):
            assert (await client.request(method, params))["error"]["code"] == -32601, method
        for method, params in (
            ("tool_call/cancel", {"sessionId": sid, "toolCallId": "nope"}),
            ("terminal/cancel", {"sessionId": sid, "terminalId": "nope"}),
        ):
            assert (await client.request(method, params))["error"]["code"] == -32602, method
        missing = await client.request("session/close", {"sessionId": "nope"})
        assert missing["error"]["code"] == -32002
        assert missing["error"]["data"] == {"sessionId": "nope"}


async def test_modes_are_a_config_option(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        sid = await v2_session(client, tmp_path)
        start = len(client.messages)
        params = {"sessionId": sid, "configId": "mode", "type": "id", "value": "ask"}
        result = (await client.request("session/set_config_option", params))["result"]
        assert result["configOptions"][0]["currentValue"] == "ask"
        assert result["configOptions"][0]["category"] == "mode"
        kinds = [u["sessionUpdate"] for u in client.updates(sid, start)]
        assert kinds == ["config_option_update"]  # and no current_mode_update
        for bad in ({"type": "boolean", "value": True}, {"type": "_slider", "value": 3}):
            refused = await client.request(
                "session/set_config_option", {"sessionId": sid, "configId": "mode", **bad}
            )
            assert refused["error"]["code"] == -32602, bad


async def test_auth_login_and_logout(tmp_path: Path) -> None:
    async with agent(tmp_path, V2_AGENT_AUTH="1") as client:
        init = await client.request("initialize", initialize_v2())
        assert init["result"]["authMethods"] == [
            {"type": "agent", "methodId": "token", "name": "Token"}
        ]
        new = {"cwd": str(tmp_path)}
        assert (await client.request("session/new", new))["error"]["code"] == -32000
        unknown = await client.request("auth/login", {"methodId": "password"})
        assert unknown["error"]["code"] == -32602
        assert (await client.request("auth/login", {"methodId": "token"}))["result"] == {}
        assert "result" in await client.request("session/new", new)
        assert (await client.request("auth/logout", {}))["result"] == {}
        assert (await client.request("session/new", new))["error"]["code"] == -32000


async def test_files_and_commands_are_done_by_the_agent(tmp_path: Path) -> None:
    # v2 has no client fs or terminals: the agent writes and runs itself, after asking.
    asked: list[Json] = []

    def answer(request: Json) -> Any:
        asked.append(request["params"])
        return allow_all(request)

    async with agent(tmp_path, answer=answer) as client:
        sid = await v2_session(client, tmp_path)
        target = tmp_path / "notes.txt"
        _, updates = await turn(client, sid, f"write {target} hello file")
        assert target.read_text() == "hello file"
        diff = asked[0]["subject"]["toolCall"]["content"][0]
        assert diff["type"] == "diff"
        assert diff["changes"] == [{"operation": "add", "path": str(target), "fileType": "text"}]
        assert diff["patch"]["format"] == "git_patch"
        assert f"+++ {target}\n" in diff["patch"]["text"] and "+hello file" in diff["patch"]["text"]
        _, updates = await turn(client, sid, "run echo from-the-agent")
        assert said(updates) == ["exit=0 output=from-the-agent"]
        assert not any(
            m.get("method", "").startswith(("fs/", "terminal/")) for m in client.messages
        )
