"""`acpstack agent` connects the MCP servers a client passes (stdio, streamable HTTP, SSE),
offers their tools to the model and to the scripted `/tools` and `/mcp` commands, shows each
call as an ACP tool call and asks permission unless the tool is annotated read-only.
Real processes: the agent, the MCP servers, the fake model server."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import spawn_agent
from acpstack.cli._mcp_tools import MAX_NAME, function_name
from acpstack.client import ClientRuntime
from acpstack.client._state import ToolCallState
from acpstack.schema import v1 as acp

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "agent" / "helpers"))
from mcp_http import SERVER, mcp_http_server  # noqa: E402
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

SCRIPTED = [sys.executable, "-m", "acpstack", "agent"]


def stdio(name: str) -> acp.McpServerStdio:
    return acp.McpServerStdio(
        name=name,
        command=sys.executable,
        args=[SERVER],
        env=[acp.EnvVariable(name="API_TOKEN", value="env-s3cret")],
    )


class Asked:
    """A permission policy that records the requests and answers with one option kind."""

    def __init__(self, kind: str = "allow_once") -> None:
        self.kind = kind
        self.requests: list[acp.RequestPermissionRequest] = []

    async def __call__(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.requests.append(request)
        return next(o for o in request.options if o.kind == self.kind)


def last_tool(runtime: ClientRuntime, sid: str) -> ToolCallState:
    return list(runtime.sessions[sid].state.tool_calls.values())[-1]


def last_text(runtime: ClientRuntime, sid: str) -> str:
    message = runtime.sessions[sid].state.last_agent_message
    assert message is not None
    return message.text


def test_function_names_fit_the_api_pattern_and_stay_unique() -> None:
    taken: set[str] = set()
    names = []
    for server, tool in [("my server/1", "do.it"), ("my server_1", "do_it"), ("x" * 80, "y" * 80)]:
        names.append(function_name(server, tool, taken))
        taken.add(names[-1])
    assert names[0] == "mcp__my_server_1__do_it"
    assert names[1] != names[0] and names[1].startswith("mcp__my_server_1__do_i")
    assert all(
        len(n) <= MAX_NAME and n.replace("_", "a").replace("-", "a").isalnum() for n in names
    )
    assert len(set(names)) == 3


async def test_scripted_tools_and_mcp_commands_over_stdio(tmp_path: Path) -> None:
    asked = Asked()
    runtime = ClientRuntime(ask=asked)
    async with spawn_agent([*SCRIPTED, "--store", str(tmp_path / "s.db")], runtime):
        await runtime.initialize()
        broken = acp.McpServerStdio(name="broken", command="/no/such/server", args=[], env=[])
        sid = (
            await runtime.new_session(str(tmp_path), mcp_servers=[stdio("calc"), broken])
        ).session_id
        await runtime.prompt(sid, "/tools")
        listing = last_text(runtime, sid)
        assert "`calc` `add`" in listing and "`calc` `echo` (read-only)" in listing
        assert "server `broken` is not available" in listing and "/no/such/server" in listing

        await runtime.prompt(sid, '/mcp calc add {"a": 2, "b": 40}')
        tool = last_tool(runtime, sid)
        assert (tool.title, tool.kind, tool.status, tool.raw_input) == (
            "calc: add",
            "other",
            "completed",
            {"a": 2, "b": 40},
        )
        assert isinstance(tool.content[0], acp.Content) and tool.content[0].content.text == "42"  # type: ignore[union-attr]
        assert len(asked.requests) == 1 and asked.requests[0].tool_call.title == "calc: add"
        assert "42" in last_text(runtime, sid)

        await runtime.prompt(sid, '/mcp calc echo {"text": "no permission needed"}')
        tool = last_tool(runtime, sid)
        assert (tool.kind, tool.status) == ("read", "completed") and len(asked.requests) == 1

        await runtime.prompt(sid, "/mcp calc fail")
        assert last_tool(
            runtime, sid
        ).status == "failed" and "error: Error executing tool fail" in last_text(runtime, sid)

        count = len(runtime.sessions[sid].state.tool_calls)
        await runtime.prompt(sid, "/mcp calc add {not json")
        assert "not valid JSON" in last_text(runtime, sid)
        await runtime.prompt(sid, "/mcp calc nosuch {}")
        assert "no MCP tool `nosuch`" in last_text(runtime, sid)
        assert len(runtime.sessions[sid].state.tool_calls) == count  # nothing ran

        await runtime.agent.session_set_mode(
            acp.SetSessionModeRequest(session_id=sid, mode_id="ask")
        )
        await runtime.prompt(sid, '/mcp calc add {"a": 1, "b": 1}')
        assert (
            "ask" in last_text(runtime, sid)
            and len(runtime.sessions[sid].state.tool_calls) == count
        )
        await runtime.prompt(sid, '/mcp calc echo {"text": "reads are fine"}')
        assert last_tool(runtime, sid).status == "completed"


async def test_refused_permission_does_not_run_the_tool(tmp_path: Path) -> None:
    runtime = ClientRuntime(ask=Asked("reject_once"))
    async with spawn_agent([*SCRIPTED, "--store", str(tmp_path / "s.db")], runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(tmp_path), mcp_servers=[stdio("calc")])).session_id
        await runtime.prompt(sid, '/mcp calc add {"a": 2, "b": 40}')
        assert last_tool(runtime, sid).status == "failed"
        assert "refused" in last_text(runtime, sid) and "42" not in last_text(runtime, sid)


async def test_scripted_mcp_command_over_http(tmp_path: Path) -> None:
    asked = Asked()
    runtime = ClientRuntime(ask=asked)
    with mcp_http_server("http") as url:
        async with spawn_agent([*SCRIPTED, "--store", str(tmp_path / "s.db")], runtime):
            await runtime.initialize()
            sid = (
                await runtime.new_session(
                    str(tmp_path), mcp_servers=[acp.McpServerHttp(name="web", url=url, headers=[])]
                )
            ).session_id
            await runtime.prompt(sid, '/mcp web add {"a": 40, "b": 2}')
            tool = last_tool(runtime, sid)
    assert (tool.title, tool.status, tool.raw_input) == ("web: add", "completed", {"a": 40, "b": 2})
    assert "42" in last_text(runtime, sid) and len(asked.requests) == 1


async def test_the_model_calls_tools_of_http_and_sse_servers(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    asked = Asked()
    with (
        mcp_http_server("http", MCP_TOKEN="hdr-s3cret") as http_url,
        mcp_http_server("sse") as sse_url,
        FakeOpenAI() as fake,
    ):
        fake.scripts += [
            [
                ("tool", 0, "c1", "mcp__web__add", [json.dumps({"a": 20, "b": 22})]),
                ("tool", 1, "c2", "mcp__events__echo", ['{"text": "hi"}']),
                ("finish", "tool_calls"),
            ],
            [("text", "The sum is 42."), ("finish", "stop")],
        ]
        runtime = ClientRuntime(ask=asked)
        async with spawn_agent(agent_command(fake.url, str(store)), runtime, env={"FAKE_KEY": "k"}):
            await runtime.initialize()
            servers: list[Any] = [
                acp.McpServerHttp(
                    name="web",
                    url=http_url,
                    headers=[acp.HttpHeader(name="Authorization", value="Bearer hdr-s3cret")],
                ),
                acp.McpServerSse(name="events", url=sse_url, headers=[]),
            ]
            sid = (await runtime.new_session(str(tmp_path), mcp_servers=servers)).session_id
            await runtime.prompt(sid, "add 20 and 22")
            tools = {t.title: t for t in runtime.sessions[sid].state.tool_calls.values()}
        offered = {t["function"]["name"]: t["function"] for t in fake.requests[0]["tools"]}
        results = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert offered["mcp__web__add"]["parameters"]["properties"].keys() == {"a", "b"}
    assert offered["mcp__web__add"]["description"].startswith("[MCP server web] Add two integers")
    assert {"mcp__events__echo", "mcp__web__getenv", "read_file"} <= offered.keys()
    assert results == [
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "tool", "tool_call_id": "c2", "content": "hi"},
    ]
    assert (tools["web: add"].status, tools["web: add"].raw_input) == (
        "completed",
        {"a": 20, "b": 22},
    )
    assert tools["events: echo"].status == "completed" and tools["events: echo"].kind == "read"
    assert [r.tool_call.title for r in asked.requests] == [
        "web: add"
    ]  # echo is read-only: no question
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite3*"))
    assert (
        b"hdr-s3cret" not in stored and b"mcp__web__add" in stored
    )  # the header's secret is not kept


async def test_a_failing_mcp_tool_is_a_failed_call_and_an_error_for_the_model(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as fake:
        fake.scripts += [
            [("tool", 0, "c1", "mcp__calc__fail", ["{}"]), ("finish", "tool_calls")],
            [("text", "It failed."), ("finish", "stop")],
        ]
        runtime = ClientRuntime(ask=Asked())
        async with spawn_agent(
            agent_command(fake.url, str(tmp_path / "s.db")), runtime, env={"FAKE_KEY": "k"}
        ):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path), mcp_servers=[stdio("calc")])).session_id
            result = await runtime.prompt(sid, "try it")
            tool = last_tool(runtime, sid)
        result_message = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"][0]
    assert (
        result.stop_reason == "end_turn" and tool.status == "failed" and tool.title == "calc: fail"
    )
    assert result_message["content"].startswith("error:") and "fail" in result_message["content"]


@pytest.mark.parametrize("field", ["env", "headers"])
async def test_secrets_of_mcp_servers_are_not_stored(tmp_path: Path, field: str) -> None:
    runtime = ClientRuntime()
    async with spawn_agent([*SCRIPTED, "--store", str(tmp_path / "s.db")], runtime):
        await runtime.initialize()
        server: Any = (
            stdio("calc")
            if field == "env"
            else acp.McpServerHttp(
                name="web",
                url="http://127.0.0.1:9/mcp?token=url-s3cret",
                headers=[acp.HttpHeader(name="X-Api-Key", value="hdr-s3cret")],
            )
        )
        sid = (await runtime.new_session(str(tmp_path), mcp_servers=[server])).session_id
    with contextlib.closing(sqlite3.connect(tmp_path / "s.db")) as db:
        (stored,) = db.execute(
            "SELECT mcp_servers FROM sessions WHERE session_id = ?", (sid,)
        ).fetchone()
    assert "s3cret" not in stored and "***" in stored


async def test_the_model_calls_a_tool_of_an_mcp_server_the_client_offers_over_acp(
    tmp_path: Path,
) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("tools")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    with FakeOpenAI() as fake:
        fake.scripts += [
            [("tool", 0, "c1", "mcp__tools__shout", ['{"text": "hi"}']), ("finish", "tool_calls")],
            [("text", "Done."), ("finish", "stop")],
        ]
        runtime = ClientRuntime(ask=Asked())
        declaration = runtime.mcp_host.add("tools", server)
        command = [*agent_command(fake.url, str(tmp_path / "s.db")), "--unstable"]
        async with spawn_agent(command, runtime, env={"FAKE_KEY": "k"}, unstable=True):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path), mcp_servers=[declaration])).session_id
            await runtime.prompt(sid, "shout hi")
            assert last_tool(runtime, sid).status == "completed"
    assert "mcp__tools__shout" in {t["function"]["name"] for t in fake.requests[0]["tools"]}
    results = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert results == [{"role": "tool", "tool_call_id": "c1", "content": "HI"}]


# Runs `acpstack` in a Python where `import mcp` fails, as without the `mcp` extra.
WITHOUT_MCP = """
import sys
class NoMcp:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoMcp())
from acpstack.cli import main
sys.exit(main(sys.argv[1:]))
"""


async def test_without_the_mcp_extra_the_user_is_told_once_per_session(tmp_path: Path) -> None:
    stderr: list[str] = []
    said: list[str] = []  # the agent's text, every chunk, and its notices

    def on_update(sid: str, update: Any) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            said.append(update.content.text)
        elif isinstance(update, events.Notice):  # our client shows notices (others: a message)
            said.append(f"[{update.severity}] {update.title}: {update.description}")

    async def turn(sid: str, text: str) -> str:
        said.clear()
        await runtime.prompt(sid, text)
        return "".join(said)

    runtime = ClientRuntime(on_update=on_update)
    command = [sys.executable, "-c", WITHOUT_MCP, "agent", "--store", str(tmp_path / "s.db")]
    async with spawn_agent(command, runtime, stderr_callback=stderr.append):
        init = await runtime.initialize()
        servers: list[Any] = [stdio("calc"), stdio("files")]
        sid = (await runtime.new_session(str(tmp_path), mcp_servers=servers)).session_id
        first = await turn(sid, "hello")
        listing = await turn(sid, "/tools")
        later = await turn(sid, "hello again")
        other = (await runtime.new_session(str(tmp_path))).session_id  # passes no servers
        no_servers = await turn(other, "hello")
    caps = init.agent_capabilities.mcp_capabilities  # type: ignore[union-attr]
    assert (caps.http, caps.sse) == (False, False)
    told = "The MCP servers `calc` and `files` that the client passed are not connected"
    fix = "pip install 'acpstack[mcp]'"
    assert first.count(told) == 1 and fix in first and "pip install '.[mcp]'" in first
    assert "[warning] MCP servers not connected: " in first
    assert told in listing and fix in listing and "No MCP servers are connected" not in listing
    assert told not in later and "not connected" not in no_servers  # once, where it applies
    warnings = [line for line in stderr if "MCP" in line]
    assert len(warnings) == 1 and "`calc` and `files`" in warnings[0] and "WARNING" in warnings[0]
    assert "env-s3cret" not in "\n".join(stderr)
