"""The unstable (and newly stable) methods end to end: our SessionAgent in a real process,
driven over real pipes by our ClientRuntime on an unstable connection."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import CapabilityError, RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.client._elicitation import ElicitationReply
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "unstable_agent.py")]
pytestmark = pytest.mark.timeout(60)


def _client(**kwargs: Any) -> ClientRuntime:
    async def ask_elicitation(request: acp.CreateElicitationRequest) -> ElicitationReply:
        return ElicitationReply("accept", {"name": "Ada", "unasked": "dropped"})

    return ClientRuntime(ask_elicitation=ask_elicitation, **kwargs)


async def test_session_management_title_archive_status_fork(tmp_path: Path) -> None:
    client = _client()
    async with spawn_agent(AGENT, client, unstable=True):
        init = await client.initialize()
        caps = init.agent_capabilities
        assert isinstance(caps, acpu.AgentCapabilities)
        session_caps = caps.session_capabilities
        assert isinstance(session_caps, acpu.SessionCapabilities)
        assert session_caps.archive is not None and session_caps.title is not None
        sid = (await client.new_session(str(tmp_path))).session_id
        other = (await client.new_session(str(tmp_path))).session_id
        assert await client.set_title(sid, "  My   session ") == "My session"
        assert client.sessions[sid].state.title == "My session"
        assert await client.session_status(sid) == "open"
        await client.archive_session(sid)
        assert await client.session_status(sid) == "saved"  # archiving closed it
        listed = await client.list_sessions()
        assert [s.session_id for s in listed] == [other]
        everything = await client.list_sessions(archived="include")
        assert {s.session_id: s.archived for s in everything} == {sid: True, other: False}  # type: ignore[attr-defined]
        only = await client.list_sessions(archived="only")
        assert [(s.session_id, s.title) for s in only] == [(sid, "My session")]
        with pytest.raises(RequestError) as bad:
            await client.list_sessions(archived="_sometimes")
        assert bad.value.code == -32602
        await client.unarchive_session(sid)
        assert {s.session_id for s in await client.list_sessions()} == {sid, other}
        forked = await client.fork_session(other, str(tmp_path))
        assert forked not in (sid, other) and await client.session_status(forked) == "open"
        with pytest.raises(RequestError) as missing:
            await client.session_status("nope")
        assert missing.value.code == -32002
        with pytest.raises(RequestError) as empty:
            await client.set_title(sid, "   ")
        assert empty.value.code == -32602


async def test_notices_compaction_elicitation_and_system_prompt(tmp_path: Path) -> None:
    client = _client()
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path), system_prompt="Be brief.")).session_id
        state = client.sessions[sid].state
        await client.prompt(sid, "notice")
        assert [(n.title, n.severity) for n in state.notices] == [("Heads up", "warning")]
        await client.prompt(sid, "compact")
        (compaction,) = state.compactions.values()
        assert compaction.status == "completed"
        assert [b.text for b in compaction.summary] == ["short summary"]  # type: ignore[union-attr]
        await client.prompt(sid, "form")
        assert state.last_agent_message is not None
        assert state.last_agent_message.text == "accept:Ada"
        await client.prompt(sid, "system")
        assert "Be brief." in state.last_agent_message.text
        # Past the runtime's check (which refuses it, see below), the agent refuses it too.
        bad = acpu.SystemPrompt(mode="override", content=[acp.TextContent(text="x")])
        with pytest.raises(RequestError) as refused:
            await client.agent.session_new(
                acpu.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[], system_prompt=bad)
            )
        assert refused.value.code == -32602


def said(client: ClientRuntime, sid: str) -> str:
    message = client.sessions[sid].state.last_agent_message
    return message.text if message else ""


async def test_a_system_prompt_reaches_the_agent_on_new_load_resume_and_fork(
    tmp_path: Path,
) -> None:
    client = _client()
    cwd = str(tmp_path)
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(cwd, system_prompt="Be brief.")).session_id
        await client.prompt(sid, "system")
        assert said(client, sid) == "{'mode': 'append', 'text': 'Be brief.'}"
        await client.load_session(sid, cwd, system_prompt="Be terse.")
        await client.prompt(sid, "system")
        assert said(client, sid) == "{'mode': 'append', 'text': 'Be terse.'}"
        two = [acp.TextContent(text="One."), acp.TextContent(text="Two.")]
        await client.resume_session(sid, cwd, system_prompt=acpu.SystemPrompt("append", two))
        await client.prompt(sid, "system")
        assert said(client, sid) == "{'mode': 'append', 'text': 'One.\\n\\nTwo.'}"
        forked = await client.fork_session(sid, cwd, system_prompt="Forked.")
        await client.prompt(forked, "system")
        assert said(client, forked) == "{'mode': 'append', 'text': 'Forked.'}"
        # This agent does not advertise `override`: refused here, nothing sent.
        override = acpu.SystemPrompt("override", [acp.TextContent(text="x")])
        with pytest.raises(CapabilityError, match=r"sessionCapabilities\.systemPrompt\.mode\."):
            await client.new_session(cwd, system_prompt=override)
        assert len(client.sessions) == 2
    stable = _client()
    async with spawn_agent(AGENT, stable):  # no unstable features: no system prompt
        await stable.initialize()
        with pytest.raises(CapabilityError, match="system_prompt.*unstable=True"):
            await stable.new_session(cwd, system_prompt="Be brief.")
        assert stable.sessions == {}


async def test_elicitation_is_declined_without_a_policy_and_notices_fall_back(
    tmp_path: Path,
) -> None:
    client = ClientRuntime()  # no elicitation policy: nothing advertised
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        # The agent's helper refuses (not advertised): the turn ends normally and says why,
        # never with an error (a client need not offer elicitation).
        assert (await client.prompt(sid, "form")).stop_reason == "end_turn"
        message = client.sessions[sid].state.last_agent_message
        assert message is not None and "elicitation" in message.text


async def test_providers_and_auth_status(tmp_path: Path) -> None:
    seen: list[str] = []
    client = _client(on_auth_status=lambda status: seen.append(str(status.state)))

    async def choose(methods: list[Any]) -> str | None:
        return str(methods[0].id)

    client.choose_auth_method = choose
    async with spawn_agent([*AGENT, "--auth"], client, unstable=True):
        await client.initialize()
        assert await client.auth_status() == "unauthenticated"
        await client.new_session(str(tmp_path))  # -32000, authenticate, retry
        assert client.auth_state == "authenticated" and seen[-1] == "authenticated"
        providers = await client.agent.providers_list()
        assert [p.provider_id for p in providers.providers] == ["main"]
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
        assert unknown.value.code == -32602 and "unknown provider" in unknown.value.message


async def test_an_mcp_server_inside_the_client_over_acp(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("tools")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    client = _client()
    declaration = client.mcp_host.add("tools", server)
    async with spawn_agent(AGENT, client, unstable=True):
        init = await client.initialize()
        mcp_caps = init.agent_capabilities.mcp_capabilities  # type: ignore[union-attr]
        assert mcp_caps.acp is True  # type: ignore[union-attr]
        sid = (await client.new_session(str(tmp_path), mcp_servers=[declaration])).session_id
        await client.prompt(sid, "mcp hello")
        message = client.sessions[sid].state.last_agent_message
        assert message is not None and message.text == "tools=['shout'] result=HELLO"
        # An unknown server id is a binding error, answered as such.
        with pytest.raises(RequestError) as gone:
            await client.mcp_host.handle(
                acpu.MessageMcpRequest(server_id="nope", request_id="1", method="tools/list")
            )
        assert gone.value.code == -33001


async def test_unstable_calls_on_a_stable_connection_fail_clearly(tmp_path: Path) -> None:
    client = _client()
    async with spawn_agent(AGENT, client):  # the agent speaks unstable, we do not
        await client.initialize()
        with pytest.raises(CapabilityError, match="unstable ACP method.*unstable=True"):
            await client.session_status("x")
    other = _client()
    async with spawn_agent(AGENT, other, unstable=True):
        await other.initialize()
        with pytest.raises(CapabilityError, match="frozen 'nes' extension"):
            await other.agent.nes_close(acp.CancelNotification(session_id="x"))  # type: ignore[arg-type]
