"""The newer ACP methods against the official TypeScript SDK 2.4.0 on unstable connections
(`@agentclientprotocol/sdk/unstable`), both ways, over real pipes.

Their agent (peers/ts_unstable_agent.mjs) driven by our ClientRuntime; our agents driven by
their client (peers/ts_unstable_client.mjs): the e2e test agent (tests/e2e/peers/
unstable_agent.py, a SessionAgent using the turn helpers) and `acpstack agent --unstable`.
Covered: session/set_title, session/archive and unarchive, session/status, session/list
with `archived`, session/fork, auth/status and auth/status_update, elicitation/create
(form and URL) and elicitation/complete, providers/*, systemPrompt, MCP over ACP
(mcp/message both ways: their McpOverAcpCaller against our McpHost, our McpConnections
against their McpOverAcpProvider), notices, compaction, subagent and inter-session
message updates, and bad inputs. The session lifecycle too, both ways: session/load (the
history replayed before the answer), session/resume (no replay), session/close,
session/delete, session/set_mode, session/set_config_option, and logout.

Not covered because the TypeScript SDK 2.4.0 does not route them: `proxy/initialize` and
`proxy/successor` (its unstable entry point has their types and names, `PROXY_METHODS`,
but "does not route them through the agent or client APIs"); `nes/*` and `document/*`
live in its separate `experimental/nes` entry point (not tested against it here).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

with contextlib.suppress(ImportError):  # (the tests that need `mcp` skip without it)
    from mcp.server.mcpserver import Context  # a tool's annotation, resolved by name

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _foreign  # noqa: E402

from acpstack import RequestError, spawn_agent  # noqa: E402
from acpstack.client import ClientRuntime, ElicitationReply  # noqa: E402
from acpstack.schema import v1 as acp  # noqa: E402
from acpstack.schema import v1_unstable as acpu  # noqa: E402

pytestmark = [
    pytest.mark.timeout(180, func_only=True),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]
E2E_AGENT = [sys.executable, str(Path(__file__).parents[1] / "e2e" / "peers" / "unstable_agent.py")]


@pytest.fixture(scope="session")
def node_sdk() -> Path:
    node_dir = _foreign.node_sdk_dir()
    assert node_dir is not None, "node is on PATH but npm is not"
    return node_dir


# -- their agent, our client ------------------------------------------------------------------


def shouting_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("tools")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    @server.tool()
    async def count(text: str, ctx: Context) -> str:
        """Count the words of the text, reporting progress (one word at a time)."""
        words = text.split()
        for done, word in enumerate(words, 1):
            await ctx.report_progress(done, len(words), f"read {word}")
        return str(len(words))

    return server


async def test_our_client_drives_their_unstable_agent(node_sdk: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    asked: list[acp.CreateElicitationRequest] = []
    statuses: list[str] = []
    completed: list[str] = []

    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        asked.append(request)
        return ElicitationReply("accept", {"name": "Ada", "unasked": "dropped"})

    client = ClientRuntime(
        ask_elicitation=ask,
        on_auth_status=lambda status: statuses.append(str(status.state)),
        on_elicitation_complete=completed.append,
    )
    declaration = client.mcp_host.add("tools", shouting_server())
    async with spawn_agent(_foreign.ts_unstable_agent_cmd(), client, unstable=True):
        init = await client.initialize()
        caps = init.agent_capabilities
        assert isinstance(caps, acpu.AgentCapabilities) and caps.providers is not None
        assert await client.auth_status() == "unauthenticated"
        cwd = str(tmp_path)
        with pytest.raises(RequestError) as unauthenticated:
            await client.new_session(cwd, mcp_servers=[declaration], system_prompt="Be brief.")
        assert unauthenticated.value.code == -32000
        await client.agent.authenticate(acp.AuthenticateRequest(method_id="key"))
        new = await client.new_session(cwd, mcp_servers=[declaration], system_prompt="Be brief.")
        sid = new.session_id
        assert statuses == ["unauthenticated", "authenticated"]  # pushed: auth/status_update
        assert client.auth_state == "authenticated"
        await check_turns(client, sid, asked, completed)
        await check_session_management_calls(client, sid, str(tmp_path))
        await check_providers_calls(client)


async def check_turns(
    client: ClientRuntime, sid: str, asked: list[Any], completed: list[str]
) -> None:
    state = client.sessions[sid].state

    def said() -> str:
        message = state.last_agent_message
        return message.text if message else ""

    await client.prompt(sid, "notice")
    assert [(n.title, n.severity) for n in state.notices] == [("Heads up", "warning")]
    await client.prompt(sid, "compact")
    assert state.compactions["c-1"].status == "completed"
    assert [b.text for b in state.compactions["c-1"].summary] == ["short summary"]  # type: ignore[union-attr]
    await client.prompt(sid, "form")
    assert said() == "accept:Ada" and asked[-1].mode == "form"
    await client.prompt(sid, "url https://example.com/login")
    action, eid = said().split(":")
    assert action == "accept" and asked[-1].url == "https://example.com/login"
    assert completed == [eid] and state.open_elicitations == set()  # completed at once
    await client.prompt(sid, "subagent")
    child = state.subagents[f"child-{sid}"]
    assert child.title == "Researcher" and child.state == "idle"
    assert state.session_messages["m-1"].text == "Find the bug. Report back."
    await client.prompt(sid, "system")
    assert said() == "append:Be brief."
    await client.prompt(sid, "mcp hello")
    progress = [
        {"method": "notifications/progress", "progressToken": "p-1", "progress": done}
        | {"total": 2, "message": f"read {word}"}
        for done, word in ((1, "two"), (2, "words"))
    ]
    assert json.loads(said()) == {
        "versions": ["2026-07-28"],
        "tools": ["shout", "count"],
        "text": "HELLO",
        "unknown": {"isError": True},
        "counted": "2",
        "progress": progress,  # our McpHost's `mcp/message` notifications, as they got them
    }
    assert state.unknown_updates == []


async def check_session_management_calls(client: ClientRuntime, sid: str, cwd: str) -> None:
    state = client.sessions[sid].state
    assert await client.set_title(sid, "Renamed") == "Renamed" and state.title == "Renamed"
    assert await client.session_status(sid) == "open"
    other = (await client.new_session(cwd)).session_id
    await client.archive_session(other)
    assert await client.session_status(other) == "saved"
    assert [s.session_id for s in await client.list_sessions()] == [sid]
    assert [s.session_id for s in await client.list_sessions(archived="only")] == [other]
    assert len(await client.list_sessions(archived="include")) == 2
    await client.unarchive_session(other)
    forked = await client.fork_session(sid, cwd)
    assert forked not in (sid, other) and await client.session_status(forked) == "open"
    with pytest.raises(RequestError) as bad:
        await client.list_sessions(archived="_sometimes")
    assert bad.value.code == -32602
    with pytest.raises(RequestError) as missing:
        await client.session_status("nope")
    assert missing.value.code == -32002


async def check_providers_calls(client: ClientRuntime) -> None:
    providers = (await client.agent.providers_list()).providers
    assert [(p.provider_id, p.supported) for p in providers] == [("main", ["openai"])]
    await client.agent.providers_set(
        acpu.SetProviderRequest(provider_id="main", api_type="openai", base_url="http://x/v1")
    )
    current = (await client.agent.providers_list()).providers[0].current
    assert isinstance(current, acpu.ProviderCurrentConfig) and current.base_url == "http://x/v1"
    await client.agent.providers_disable(acpu.DisableProviderRequest(provider_id="main"))
    assert (await client.agent.providers_list()).providers[0].current is None
    with pytest.raises(RequestError) as unknown:
        await client.agent.providers_set(
            acpu.SetProviderRequest(provider_id="zz", api_type="openai", base_url="http://x")
        )
    assert unknown.value.code == -32602


def current_values(options: Any) -> dict[str, Any]:
    return {o.id: o.current_value for o in options}


async def test_our_client_drives_their_session_lifecycle(node_sdk: Path, tmp_path: Path) -> None:
    statuses: list[str] = []
    client = ClientRuntime(on_auth_status=lambda status: statuses.append(str(status.state)))
    cwd = str(tmp_path)
    async with spawn_agent(_foreign.ts_unstable_agent_cmd(), client, unstable=True):
        caps = (await client.initialize()).agent_capabilities
        assert isinstance(caps, acp.AgentCapabilities) and caps.load_session is True
        assert isinstance(caps.auth, acp.AgentAuthCapabilities)
        assert isinstance(caps.auth.logout, acp.LogoutCapabilities)
        await client.agent.authenticate(acp.AuthenticateRequest(method_id="key"))
        sid = (await client.new_session(cwd)).session_id
        await check_their_modes_and_options(client, sid)
        await check_their_close_load_resume(client, sid, cwd)
        await check_their_delete_and_logout(client, sid, cwd)
        # auth/status_update after authenticate and after logout, then our auth/status.
        assert statuses == ["authenticated", "unauthenticated", "unauthenticated"]


async def check_their_modes_and_options(client: ClientRuntime, sid: str) -> None:
    state = client.sessions[sid].state
    assert state.current_mode_id == "code" and [m.id for m in state.available_modes] == [
        "code",
        "ask",
    ]
    assert current_values(state.config_options) == {"model": "small"}
    await client.prompt(sid, "hello")
    await client.agent.session_set_mode(acp.SetSessionModeRequest(session_id=sid, mode_id="ask"))
    assert state.current_mode_id == "ask"  # their current_mode_update came before the answer
    answer = await client.agent.session_set_config_option(
        acp.SetSessionConfigOptionRequest(session_id=sid, config_id="model", value="large")
    )
    assert current_values(answer.config_options) == {"model": "large"}
    await client.prompt(sid, "settings")
    assert agent_said(state) == "mode=ask model=large"  # what the agent itself now reports
    with pytest.raises(RequestError) as bad_mode:
        await client.agent.session_set_mode(acp.SetSessionModeRequest(session_id=sid, mode_id="x"))
    with pytest.raises(RequestError) as bad_value:
        await client.agent.session_set_config_option(
            acp.SetSessionConfigOptionRequest(session_id=sid, config_id="model", value="huge")
        )
    assert bad_mode.value.code == bad_value.value.code == -32602


def agent_said(state: Any) -> str:
    message = state.last_agent_message
    return message.text if message else ""


async def check_their_close_load_resume(client: ClientRuntime, sid: str, cwd: str) -> None:
    await client.close_session(sid)
    assert sid not in client.sessions and await client.session_status(sid) == "saved"
    with pytest.raises(RequestError) as closed:
        await client.prompt(sid, "hello")
    assert closed.value.code == -32002 and closed.value.data == {"sessionId": sid}
    loaded = await client.load_session(sid, cwd)
    state = client.sessions[sid].state
    # Their replay of the history came before the answer: both turns, in a fresh state.
    assert [(m.speaker, m.text) for m in state.messages] == [
        ("user", "hello"),
        ("agent", "echo: hello"),
        ("user", "settings"),
        ("agent", "mode=ask model=large"),
    ]
    assert isinstance(loaded.modes, acp.SessionModeState) and loaded.modes.current_mode_id == "ask"
    assert current_values(state.config_options) == {"model": "large"}
    assert await client.session_status(sid) == "open"
    await client.close_session(sid)
    resumed = await client.resume_session(sid, cwd)
    state = client.sessions[sid].state
    assert state.messages == []  # no replay
    assert isinstance(resumed.modes, acp.SessionModeState)
    assert resumed.modes.current_mode_id == state.current_mode_id == "ask"
    assert isinstance(resumed.config_options, list)
    assert current_values(resumed.config_options) == {"model": "large"}
    await client.prompt(sid, "again")  # resumed: it takes prompts again
    assert [m.text for m in state.messages] == ["again", "echo: again"]


async def check_their_delete_and_logout(client: ClientRuntime, sid: str, cwd: str) -> None:
    assert [s.session_id for s in await client.list_sessions()] == [sid]
    await client.agent.session_delete(acp.DeleteSessionRequest(session_id=sid))
    assert await client.list_sessions() == []
    with pytest.raises(RequestError) as gone:
        await client.load_session(sid, cwd)
    assert gone.value.code == -32002 and gone.value.data == {"sessionId": sid}
    await client.agent.logout()
    assert client.auth_state == "unauthenticated"  # their auth/status_update
    assert await client.auth_status() == "unauthenticated"
    with pytest.raises(RequestError) as unauthenticated:
        await client.new_session(cwd)
    assert unauthenticated.value.code == -32000


# -- their client, our agents -----------------------------------------------------------------


def their_client(agent: list[str], *options: str) -> dict[str, Any]:
    argv = _foreign.ts_unstable_client_cmd(agent, *options)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(proc.stdout)
    assert report["agentExitCode"] == 0
    # The SDK's schemas accepted every session/update we sent, whatever the step.
    counts = report["updateCounts"]
    assert counts["parsed"] == counts["received"] > 0, counts
    for turn in report["turns"]:
        assert turn["stopReason"] == "end_turn", turn
        # The SDK accepted every update we sent (its zod schemas drop invalid ones).
        assert len(turn["sdkUpdates"]) == len(turn["updates"]), turn
    return report


def texts(turn: dict[str, Any]) -> list[str]:
    return [
        u["content"]["text"] for u in turn["updates"] if u["sessionUpdate"] == "agent_message_chunk"
    ]


def check_session_management(steps: dict[str, Any]) -> None:
    sid, other = steps["sessionId"], steps["other"]
    assert steps["setTitle"] == {"title": "My session"}
    assert steps["status"] == {"status": "open"} and steps["statusArchived"] == {"status": "saved"}
    listed = {s["sessionId"]: s for s in steps["listDefault"]["sessions"]}
    assert sid in listed and other not in listed and listed[sid]["title"] == "My session"
    assert {s["sessionId"]: s["archived"] for s in steps["listOnly"]["sessions"]} == {other: True}
    included = {s["sessionId"]: s["archived"] for s in steps["listInclude"]["sessions"]}
    assert included[other] is True and included[sid] is False
    assert other in {s["sessionId"] for s in steps["listAfterUnarchive"]["sessions"]}
    assert steps["statusForked"] == {"status": "open"}
    assert steps["listBadFilter"]["error"]["code"] == -32602
    assert steps["setEmptyTitle"]["error"]["code"] == -32602
    assert steps["statusUnknown"]["error"]["code"] == -32002


def test_their_client_drives_our_session_agent(node_sdk: Path, tmp_path: Path) -> None:
    report = their_client([*E2E_AGENT, "--auth"], "--cwd", str(tmp_path))
    caps = report["initialize"]["agentCapabilities"]
    assert caps["providers"] == {} and caps["auth"] == {"status": {}, "logout": {}}
    assert caps["mcpCapabilities"]["acp"] is True
    steps = report["steps"]
    assert steps["authStatusBefore"] == {"state": "unauthenticated"}
    assert steps["newBeforeAuth"]["error"]["code"] == -32000
    assert steps["authStatusAfter"] == {"state": "authenticated"}
    assert report["authUpdates"] == [{"state": "authenticated"}, {"state": "unauthenticated"}]
    assert steps["logout"] == {} and steps["authStatusAfterLogout"] == {"state": "unauthenticated"}
    assert steps["newAfterLogout"]["error"]["code"] == -32000  # logged out: authenticate again
    turns = {t["prompt"].split()[0]: t for t in report["turns"]}
    assert [u["sessionUpdate"] for u in turns["notice"]["updates"]] == ["notice"]
    assert [u["sessionUpdate"] for u in turns["compact"]["updates"]] == [
        "compaction_update",
        "compaction_summary_chunk",
        "compaction_update",
    ]
    form, url = report["elicitations"]
    assert form["mode"] == "form" and form["requestedSchema"]["required"] == ["name"]
    assert texts(turns["form"]) == ["accept:Grace"]
    assert url["mode"] == "url" and url["url"] == "https://example.com/login"
    assert texts(turns["url-open"]) == [f"accept:{url['elicitationId']}"]
    assert report["completions"] == [{"elicitationId": url["elicitationId"]}]
    kinds = [u["sessionUpdate"] for u in turns["subagent"]["updates"]]
    assert kinds[:3] == ["subagent_update", "session_message", "session_message_chunk"]
    assert texts(turns["system"]) == ["{'mode': 'append', 'text': 'Be brief.'}"]
    assert texts(turns["mcp"]) == ["tools=['shout', 'count'] result=HELLO"]
    # Their server's progress (`mcp/message` notifications) reached our agent's MCP session.
    assert texts(turns["mcp-progress"]) == [
        "progress=[(1.0, 2.0, 'read two'), (2.0, 2.0, 'read words')] result=2"
    ]
    assert report["mcpRequests"] == [
        {"method": method, "protocolVersion": "2026-07-28"}
        for method in ("server/discover", "tools/list", "tools/call", "tools/call")
    ]
    check_session_management(steps)
    assert [p["current"] for p in steps["providersList"]["providers"]] == [
        {"apiType": "openai", "baseUrl": "http://127.0.0.1:1/v1"}
    ]
    assert steps["providersListAfterSet"]["providers"][0]["current"]["baseUrl"] == "http://x/v1"
    assert steps["providersListAfterDisable"]["providers"][0]["current"] is None
    assert steps["providersSetUnknown"]["error"]["code"] == -32602


def test_their_client_drives_the_reference_agent(node_sdk: Path, tmp_path: Path) -> None:
    agent = [sys.executable, "-m", "acpstack", "agent", "--unstable"]
    agent += ["--store", str(tmp_path / "store.sqlite3")]
    report = their_client(agent, "--scenario", "sessions", "--cwd", str(tmp_path))
    session_caps = report["initialize"]["agentCapabilities"]["sessionCapabilities"]
    assert {"fork", "archive", "status", "title", "systemPrompt"} <= set(session_caps)
    (turn,) = report["turns"]
    assert texts(turn)[-1] == "`tools` `shout`:\n\n```\nHELLO\n```\n"
    assert [r["method"] for r in report["mcpRequests"]] == [
        "server/discover",
        "tools/list",
        "tools/call",
    ]
    check_session_management(report["steps"])


def said(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


def option_values(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {o["id"]: o["currentValue"] for o in options}


def test_their_client_drives_the_reference_agents_session_lifecycle(
    node_sdk: Path, tmp_path: Path
) -> None:
    agent = [sys.executable, "-m", "acpstack", "agent", "--unstable"]
    agent += ["--store", str(tmp_path / "store.sqlite3")]
    report = their_client(agent, "--scenario", "lifecycle", "--cwd", str(tmp_path))
    caps = report["initialize"]["agentCapabilities"]
    assert caps["loadSession"] is True
    assert {"resume", "close", "delete"} <= set(caps["sessionCapabilities"])
    steps, traces = report["steps"], report["traces"]
    check_reference_modes_and_options(steps, traces)
    check_reference_reopening(steps, traces)
    sid = steps["sessionId"]
    assert [s["sessionId"] for s in steps["listBeforeDelete"]["sessions"]] == [sid]
    assert steps["delete"] == {} and steps["listAfterDelete"] == {"sessions": []}
    for after_delete in ("loadDeleted", "resumeDeleted", "promptDeleted"):
        assert steps[after_delete]["error"]["code"] == -32002, after_delete
    assert steps["deleteAgain"] == {}  # deleting what is gone is a no-op
    # The reference agent takes no authentication (no auth.logout advertised): refused.
    assert "logout" not in caps.get("auth", {})
    assert steps["logout"]["error"]["code"] == -32601


def check_reference_modes_and_options(steps: dict[str, Any], traces: dict[str, Any]) -> None:
    new = steps["new"]
    assert new["modes"]["currentModeId"] == "code"
    assert [m["id"] for m in new["modes"]["availableModes"]] == ["code", "ask"]
    assert option_values(new["configOptions"]) == {"mode": "code"}
    assert steps["prompt"] == {"stopReason": "end_turn"}
    assert "Commands:\n- `/help`" in said(traces["prompt"])
    assert steps["setMode"] == {}
    switched = traces["setMode"]
    assert switched[0] == {"sessionUpdate": "current_mode_update", "currentModeId": "ask"}
    assert option_values(switched[1]["configOptions"]) == {"mode": "ask"}
    # set_config_option answers every option with its new value (the mode option: the mode).
    assert option_values(steps["setConfigOption"]["configOptions"]) == {"mode": "code"}
    assert traces["setConfigOption"][0] == {
        "sessionUpdate": "current_mode_update",
        "currentModeId": "code",
    }
    for bad in ("setModeUnknown", "setConfigUnknown", "setConfigBadValue"):
        assert steps[bad]["error"]["code"] == -32602, bad


def check_reference_reopening(steps: dict[str, Any], traces: dict[str, Any]) -> None:
    assert steps["close"] == {}
    assert steps["promptClosed"]["error"]["code"] == -32002  # closed: load or resume it first
    replayed = traces["load"]  # before the answer: the earlier turn and the mode switches
    assert said(replayed, "user_message_chunk") == "/help"
    assert said(replayed) == said(traces["prompt"])
    modes = [u["currentModeId"] for u in replayed if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["ask", "code"]
    assert steps["load"]["modes"]["currentModeId"] == "code"
    assert steps["setModeLoaded"] == {} and steps["closeLoaded"] == {}
    # Resumed without a replay, in the mode set after the load (kept in the store).
    history = {"user_message_chunk", "agent_message_chunk", "current_mode_update"}
    assert [u for u in traces["resume"] if u["sessionUpdate"] in history] == []
    assert steps["resume"]["modes"]["currentModeId"] == "ask"
    assert option_values(steps["resume"]["configOptions"]) == {"mode": "ask"}
    assert steps["promptResumed"] == {"stopReason": "end_turn"}
    assert said(traces["promptResumed"]) == said(traces["prompt"])
