"""MCP servers from session/new, connected with the official `mcp` SDK (real processes)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.agent._mcp import McpConnections, McpServerError
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

SERVER = str(Path(__file__).parent / "helpers" / "mcp_server.py")
sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from mcp_http import mcp_http_server  # noqa: E402

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "mcp_agent.py")]


def stdio(name: str, **env: str) -> acp.McpServerStdio:
    return acp.McpServerStdio(
        name=name,
        command=sys.executable,
        args=[SERVER],
        env=[acp.EnvVariable(name=k, value=v) for k, v in env.items()],
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


async def test_two_servers_tools_and_errors() -> None:
    async with McpConnections() as mcp:
        errors = await mcp.start([stdio("one", SECRET="s1"), stdio("two", SECRET="s2")])
        assert errors == {"one": None, "two": None}
        names = sorted(f"{t.server}.{t.name}" for t in await mcp.list_tools())
        assert names == sorted(
            f"{s}.{t}" for s in ("one", "two") for t in ("add", "echo", "fail", "getenv", "pid")
        )
        assert (await mcp.call_tool("one", "add", {"a": 2, "b": 40})).text == "42"
        assert (await mcp.call_tool("two", "echo", {"text": "hi"})).text == "hi"
        assert (await mcp.call_tool("one", "getenv", {"name": "SECRET"})).text == "s1"
        assert (await mcp.call_tool("two", "getenv", {"name": "SECRET"})).text == "s2"
        failed = await mcp.call_tool("one", "fail")
        assert failed.is_error and "fail" in failed.text


async def test_a_failing_server_does_not_fail_the_others() -> None:
    async with McpConnections() as mcp:
        errors = await mcp.start(
            [
                stdio("good"),
                acp.McpServerStdio(name="missing", command="/no/such/server", args=[], env=[]),
                acp.McpServerStdio(
                    name="quits", command=sys.executable, args=["-c", "pass"], env=[]
                ),
            ]
        )
        assert errors["good"] is None
        assert isinstance(errors["missing"], McpServerError) and "/no/such/server" in str(
            errors["missing"]
        )
        assert isinstance(errors["quits"], McpServerError)
        assert mcp.connected == ["good"]
        assert (await mcp.call_tool("good", "add", {"a": 1, "b": 1})).text == "2"
        with pytest.raises(McpServerError, match="missing"):
            await mcp.call_tool("missing", "add", {"a": 1, "b": 1})


async def test_fail_fast_and_http_refused() -> None:
    mcp = McpConnections()
    with pytest.raises(McpServerError, match="nope"):
        await mcp.start(
            [stdio("ok"), acp.McpServerStdio(name="nope", command="/nope", args=[], env=[])],
            fail_fast=True,
        )
    assert mcp.connected == []
    async with McpConnections(allow_http=False) as refused:
        errors = await refused.start(
            [acp.McpServerHttp(name="web", url="http://127.0.0.1:9/mcp", headers=[])]
        )
        assert "not enabled" in str(errors["web"])


async def test_aclose_stops_every_server_process() -> None:
    mcp = McpConnections()
    await mcp.start([stdio("a"), stdio("b")])
    pids = [int((await mcp.call_tool(name, "pid")).text) for name in ("a", "b")]
    assert all(alive(p) for p in pids)
    await mcp.aclose()
    for _ in range(600):  # other processes' exit: no event to wait on here, so look (30 s at most)
        if not any(alive(p) for p in pids):
            break
        await asyncio.sleep(0.05)
    assert not any(alive(p) for p in pids)
    with pytest.raises(McpServerError, match="closed"):
        await mcp.call_tool("a", "add", {"a": 1, "b": 2})


async def test_streamable_http_and_sse_servers() -> None:
    for kind, config in (("http", acp.McpServerHttp), ("sse", acp.McpServerSse)):
        with mcp_http_server(kind) as url:
            async with McpConnections(allow_http=True, allow_sse=True) as mcp:
                errors = await mcp.start([config(name="web", url=url, headers=[])])
                assert errors == {"web": None}
                assert (await mcp.call_tool("web", "add", {"a": 20, "b": 22})).text == "42"


async def test_headers_reach_the_server_and_annotations_the_tools() -> None:
    with mcp_http_server("http", MCP_TOKEN="t0ken") as url:
        async with McpConnections(allow_http=True) as mcp:
            refused = await mcp.start([acp.McpServerHttp(name="anon", url=url, headers=[])])
            assert refused["anon"] is not None
            good = [
                acp.McpServerHttp(
                    name="web",
                    url=url,
                    headers=[acp.HttpHeader(name="Authorization", value="Bearer t0ken")],
                )
            ]
            assert await mcp.start(good) == {"web": None}
            tools = {t.name: t for t in await mcp.list_tools()}
            assert tools["echo"].read_only and not tools["add"].read_only
            assert [c.name for c in mcp.configs] == ["web"]


async def test_tool_called_during_a_prompt(tmp_path: Path) -> None:
    runtime = ClientRuntime()
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (
            await runtime.new_session(
                str(tmp_path),
                mcp_servers=[
                    stdio("calc"),
                    acp.McpServerStdio(name="broken", command="/nope", args=[], env=[]),
                ],
            )
        ).session_id
        await runtime.prompt(sid, "tools")
        listing = json.loads(runtime.sessions[sid].state.last_agent_message.text)  # type: ignore[union-attr]
        assert "calc.add" in listing["tools"] and "broken" in listing["errors"]
        result = await runtime.prompt(sid, 'calc add {"a": 19, "b": 23}')
        assert result.stop_reason == "end_turn"
        state = runtime.sessions[sid].state
        assert (
            state.last_agent_message is not None and state.last_agent_message.text == "result: 42"
        )
        tool = next(iter(state.tool_calls.values()))
        assert tool.status == "completed" and tool.title == "calc.add"


async def test_fail_fast_agent_refuses_the_session(tmp_path: Path) -> None:
    runtime = ClientRuntime()
    async with spawn_agent(AGENT, runtime, env={"MCP_FAIL_FAST": "1"}):
        await runtime.initialize()
        with pytest.raises(RequestError) as info:
            await runtime.new_session(
                str(tmp_path),
                mcp_servers=[acp.McpServerStdio(name="broken", command="/nope", args=[], env=[])],
            )
        assert "broken" in info.value.message
