"""ClientRuntime's session setup on unstable connections (in one process: what it sends, and
what it refuses before sending), and the elicitation rules that can never accept."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from acpstack import Agent, CapabilityError
from acpstack.client import (
    AskElicitation,
    ClientRuntime,
    ElicitationReply,
    ElicitationRules,
)
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu
from acpstack.testing import connected_pair

pytestmark = pytest.mark.timeout(30)


class SetupAgent(Agent):
    """Records the session setup requests; advertises `systemPrompt` when told to."""

    def __init__(self, system_prompt: acpu.SessionSystemPromptCapabilities | None) -> None:
        self.system_prompt = system_prompt
        self.seen: list[Any] = []

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        session = acpu.SessionCapabilities(fork=acpu.SessionForkCapabilities())
        if self.system_prompt is not None:
            session.system_prompt = self.system_prompt
        caps = acpu.AgentCapabilities(load_session=True, session_capabilities=session)
        return acpu.InitializeResponse(protocol_version=1, agent_capabilities=caps)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        self.seen.append(params)
        return acp.NewSessionResponse(session_id=f"s{len(self.seen)}")

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        self.seen.append(params)
        return acp.LoadSessionResponse()

    async def session_fork(self, params: acpu.ForkSessionRequest) -> acpu.ForkSessionResponse:
        self.seen.append(params)
        return acpu.ForkSessionResponse(session_id="forked")


async def test_a_system_prompt_goes_only_to_an_agent_that_advertises_it(tmp_path: Path) -> None:
    cwd = str(tmp_path)
    agent = SetupAgent(system_prompt=None)
    runtime = ClientRuntime()
    async with connected_pair(agent, runtime, unstable=True):
        await runtime.initialize()
        with pytest.raises(CapabilityError, match=r"does not advertise sessionCapabilities\."):
            await runtime.new_session(cwd, system_prompt="Be brief.")
        with pytest.raises(CapabilityError, match="systemPrompt"):
            await runtime.load_session("old", cwd, system_prompt="Be brief.")
        with pytest.raises(CapabilityError, match="systemPrompt"):
            await runtime.fork_session("old", cwd, system_prompt="Be brief.")
        assert agent.seen == [] and runtime.sessions == {}  # nothing sent, nothing tracked
        await runtime.new_session(cwd)  # without one: fine
        assert agent.seen[0].system_prompt is acp.UNSET


async def test_the_system_prompt_and_an_acp_hosted_mcp_server_are_sent_typed(
    tmp_path: Path,
) -> None:
    cwd = str(tmp_path)
    override = acpu.SessionSystemPromptModeCapabilities(
        override=acpu.SessionSystemPromptOverrideCapabilities()
    )
    agent = SetupAgent(acpu.SessionSystemPromptCapabilities(mode=override))
    runtime = ClientRuntime()
    declaration = runtime.mcp_host.add("tools", object(), server_id="tools-1")
    async with connected_pair(agent, runtime, unstable=True):
        await runtime.initialize()
        await runtime.new_session(cwd, mcp_servers=[declaration], system_prompt="Be brief.")
        mine = acpu.SystemPrompt("override", [acpu.TextContent(text="Only this.")])
        await runtime.load_session("old", cwd, system_prompt=mine, additional_directories=["/x"])
        assert await runtime.fork_session("old", cwd) == "forked"
        new, load, fork = agent.seen
        assert isinstance(new, acpu.NewSessionRequest)
        assert new.mcp_servers == [acpu.McpServerAcp(name="tools", server_id="tools-1")]
        assert new.system_prompt == acpu.SystemPrompt(
            "append", [acpu.TextContent(text="Be brief.")]
        )
        assert load.system_prompt == mine and load.additional_directories == ["/x"]
        assert fork.mcp_servers is acp.UNSET and fork.system_prompt is acp.UNSET
        assert set(runtime.sessions) == {"s1", "old", "forked"}


async def test_on_a_stable_connection_unstable_setup_fails_before_sending(tmp_path: Path) -> None:
    cwd = str(tmp_path)
    agent = SetupAgent(system_prompt=None)
    runtime = ClientRuntime()
    declaration = runtime.mcp_host.add("tools", object())
    async with connected_pair(agent, runtime):
        await runtime.initialize()
        with pytest.raises(CapabilityError, match="system_prompt: an unstable ACP feature"):
            await runtime.new_session(cwd, system_prompt="Be brief.")
        with pytest.raises(CapabilityError, match=r"McpServerAcp.*unstable=True"):
            await runtime.new_session(cwd, mcp_servers=[declaration])
        with pytest.raises(CapabilityError, match="session/fork: an unstable ACP feature"):
            await runtime.fork_session("old", cwd)
        assert agent.seen == [] and runtime.sessions == {}


# -- elicitation rules never accept -------------------------------------------------------


def url_request(url: str) -> acp.CreateElicitationRequest:
    return acp.CreateElicitationRequest(
        message="Sign in", mode="url", url=url, elicitation_id="e-1", session_id="s"
    )


async def test_a_rule_that_accepts_is_taken_as_ask_the_user(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked: list[str] = []

    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        asked.append(str(request.url))
        return ElicitationReply("decline")  # the user says no

    def trusted(request: acp.CreateElicitationRequest) -> Any:
        return "accept" if "trusted" in str(request.url) else None

    rules = ElicitationRules([trusted], then=AskElicitation(ask))
    with caplog.at_level(logging.WARNING, logger="acpstack.client"):
        reply = await rules.decide(url_request("https://trusted.example/login"))
    assert reply == ElicitationReply("decline") and asked == ["https://trusted.example/login"]
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert "trusted" in warning.getMessage() and "'accept'" in warning.getMessage()
    assert "rules may only decline or cancel" in warning.getMessage()


async def test_a_rule_that_accepts_without_a_user_to_ask_declines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def yes(request: acp.CreateElicitationRequest) -> Any:
        return "accept"

    def anything_else(request: acp.CreateElicitationRequest) -> Any:
        return "allow"  # not a verdict ACP knows: no more than an accept

    for rule in (yes, anything_else):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="acpstack.client"):
            reply = await ElicitationRules([rule]).decide(url_request("https://x.example"))
        assert reply == ElicitationReply("decline")
        assert len(caplog.records) == 1 and "declined" in caplog.records[0].getMessage()


async def test_later_rules_still_decline_or_cancel_after_one_that_accepted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        raise AssertionError("the user is not asked: a later rule cancels")

    rules = ElicitationRules(
        [lambda request: "accept", lambda request: "cancel"], then=AskElicitation(ask)
    )
    with caplog.at_level(logging.WARNING, logger="acpstack.client"):
        assert await rules.decide(url_request("https://x.example")) == ElicitationReply("cancel")
    assert len(caplog.records) == 1


async def test_on_a_v2_connection_the_system_prompt_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    from acpstack.agent import MemorySessionStore, SessionAgent, Turn, connect_agent
    from acpstack.client import connect_client
    from acpstack.transports import memory_pair

    class Quiet(SessionAgent):
        async def prompt(self, turn: Turn) -> acp.StopReason:
            return "end_turn"

    agent_side, client_side = memory_pair()
    runtime = ClientRuntime(protocol_version=2)
    agent_conn = connect_agent(
        Quiet(store=MemorySessionStore()), agent_side, unstable=True, protocol_versions=(2,)
    )
    client_conn = connect_client(runtime, client_side, unstable=True)
    async with agent_conn, client_conn.connection:
        await runtime.initialize()
        with pytest.raises(CapabilityError, match="not send it on protocol v2 connections"):
            await runtime.new_session(str(tmp_path), system_prompt="Be brief.")
        with pytest.raises(CapabilityError, match="not send it on protocol v2 connections"):
            await runtime.resume_session("old", str(tmp_path), system_prompt="Be brief.")
        assert runtime.sessions == {}
        await runtime.new_session(str(tmp_path))  # without one: fine
        assert len(runtime.sessions) == 1
