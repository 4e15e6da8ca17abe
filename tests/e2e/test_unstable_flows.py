"""More of the unstable methods end to end over real pipes (our SessionAgent in a process,
our ClientRuntime here): subagents and inter-session messages through the turn helpers,
the URL elicitation flow, elicitation rules, and MCP servers inside the client: one that
reports progress (`mcp/message` notifications, client to agent) and one that answers with
an error naming no request."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import spawn_agent
from acpstack.client import AskElicitation, ClientRuntime, ElicitationReply, ElicitationRules
from acpstack.schema import v1 as acp

with contextlib.suppress(ImportError):  # (the tests that need `mcp` skip without it)
    from mcp.server.mcpserver import Context  # a tool's annotation, resolved by name

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "unstable_agent.py")]
pytestmark = pytest.mark.timeout(60)


def said(client: ClientRuntime, sid: str) -> str:
    message = client.sessions[sid].state.last_agent_message
    return message.text if message else ""


async def test_subagent_and_inter_session_messages_reach_the_session_state(
    tmp_path: Path,
) -> None:
    client = ClientRuntime()
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "subagent")
        child_id, message_id = (part.split("=")[1] for part in said(client, sid).split())
        state = client.sessions[sid].state
        child = state.subagents[child_id]
        assert child.title == "Researcher" and child.state == "idle"
        assert child.fields["state"] == {"state": "idle", "stopReason": "end_turn"}
        assert "description" in child.fields and child.fields["description"] is None  # cleared
        message = state.session_messages[message_id]
        assert message.text == "Find the bug. Report back."
        assert message.fields == {"senderSessionId": sid, "recipientSessionId": child_id}
        assert state.unknown_updates == []
        # A state name ACP does not define is the author's mistake: a clear ValueError.
        await client.prompt(sid, "subagent-bad")
        assert "unknown subagent state 'sleeping'" in said(client, sid)


async def test_subagent_helpers_send_nothing_to_a_client_without_subagents(
    tmp_path: Path,
) -> None:
    seen: list[Any] = []
    client = ClientRuntime(on_update=lambda sid, update: seen.append(update))
    async with spawn_agent(AGENT, client):  # a stable connection: no `subagents` advertised
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "subagent")
        state = client.sessions[sid].state
        assert said(client, sid).startswith("child=")
        assert state.subagents == {} and state.session_messages == {}
        assert state.unknown_updates == []
        assert all(isinstance(u, events.AgentMessageChunk | events.UserMessageChunk) for u in seen)


async def test_url_elicitation_stays_open_until_the_agent_completes_it(tmp_path: Path) -> None:
    asked: list[acp.CreateElicitationRequest] = []
    replies = ["accept", "decline"]
    completed: list[str] = []

    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        asked.append(request)
        return ElicitationReply(replies.pop(0))  # type: ignore[arg-type]

    client = ClientRuntime(ask_elicitation=ask, on_elicitation_complete=completed.append)
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        state = client.sessions[sid].state
        await client.prompt(sid, "url-open https://example.com/login")
        action, eid = said(client, sid).split(":")
        assert action == "accept"
        request = asked[0]
        assert (request.mode, request.url, request.elicitation_id, request.session_id) == (
            "url",
            "https://example.com/login",
            eid,
            sid,
        )
        assert state.open_elicitations == {eid}
        await client.prompt(sid, f"url-done {eid}")
        assert state.open_elicitations == set() and completed == [eid]
        # Declined: never open, and a later completion of it changes nothing.
        await client.prompt(sid, "url-open https://example.com/pay")
        action, declined = said(client, sid).split(":")
        assert action == "decline" and state.open_elicitations == set()
        await client.prompt(sid, "url-done unknown-id")
        assert state.open_elicitations == set() and completed == [eid, "unknown-id"]
        assert len(asked) == 2


async def test_elicitation_rules_decline_or_cancel_before_the_user_is_asked(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        asked.append(str(request.mode))
        return ElicitationReply("accept", {"name": "Ada"})

    def no_plain_http(request: acp.CreateElicitationRequest) -> Any:
        return "decline" if str(request.url).startswith("http://") else None

    def not_while_paying(request: acp.CreateElicitationRequest) -> Any:
        return "cancel" if "/pay" in str(request.url) else None

    rules = ElicitationRules([no_plain_http, not_while_paying], then=AskElicitation(ask))
    client = ClientRuntime(elicitation_policy=rules)
    async with spawn_agent(AGENT, client, unstable=True):
        init = await client.initialize()
        assert init.protocol_version == 1
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "url-open http://insecure.example/login")
        assert said(client, sid).startswith("decline:") and asked == []
        await client.prompt(sid, "url-open https://shop.example/pay")
        assert said(client, sid).startswith("cancel:") and asked == []
        await client.prompt(sid, "url-open https://example.com/login")
        assert said(client, sid).startswith("accept:") and asked == ["url"]
        await client.prompt(sid, "form")
        assert said(client, sid) == "accept:Ada" and asked == ["url", "form"]


async def test_a_rule_that_would_accept_a_url_leaves_it_to_the_user(tmp_path: Path) -> None:
    asked: list[str] = []

    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        asked.append(str(request.url))
        return ElicitationReply("decline")

    def trusting(request: acp.CreateElicitationRequest) -> Any:
        return "accept"  # what the type forbids, at run time: not obeyed

    client = ClientRuntime(elicitation_policy=ElicitationRules([trusting], AskElicitation(ask)))
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        await client.prompt(sid, "url-open https://example.com/login")
        assert said(client, sid).startswith("decline:")  # the user's answer, not the rule's
        assert asked == ["https://example.com/login"]
        assert client.sessions[sid].state.open_elicitations == set()


async def test_a_mode_the_client_did_not_advertise_is_refused_on_both_sides(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def ask(request: acp.CreateElicitationRequest) -> ElicitationReply:
        asked.append(str(request.mode))
        return ElicitationReply("accept", {"name": "Ada"})

    client = ClientRuntime(elicitation_policy=AskElicitation(ask, modes=("form",)))
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        # Our agent's helper does not send what the client did not advertise ...
        await client.prompt(sid, "url-open https://example.com/login")
        assert said(client, sid).startswith("refused:") and "elicitation.url" in said(client, sid)
        # ... and the client refuses it from an agent that sends it anyway.
        await client.prompt(sid, "url-raw https://example.com/login")
        assert said(client, sid) == "error -32602: Unsupported elicitation mode: url"
        assert asked == [] and client.sessions[sid].state.open_elicitations == set()
        await client.prompt(sid, "form")
        assert said(client, sid) == "accept:Ada" and asked == ["form"]


class NoIdErrors:
    """A broken MCP server (what `McpHost` needs of one: `run` and
    `create_initialization_options`) that answers every request with an error whose id is
    null, as a server does for a message it cannot read."""

    def create_initialization_options(self) -> None:
        return None

    async def run(self, read: Any, write: Any, options: Any, raise_exceptions: bool) -> None:
        import mcp_types
        from mcp.shared.message import SessionMessage

        async for _item in read:
            error = mcp_types.ErrorData(code=-32700, message="Parse error")
            await write.send(
                SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=None, error=error))
            )


async def test_an_inner_mcp_error_without_an_id_fails_the_request_instead_of_hanging(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp")
    client = ClientRuntime()
    declaration = client.mcp_host.add("broken", NoIdErrors())
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path))).session_id
        prompt = client.prompt(sid, f"mcp-raw {declaration.server_id} tools/list")
        await asyncio.wait_for(prompt, 15)
        text = said(client, sid)
        assert text.startswith("error -33002: MCP server answered with an error that names no")
        assert "'code': -32700" in text and "Parse error" in text


def counting_server() -> Any:
    """An MCP server whose `count` tool reports its progress, one word at a time."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("tools")

    @server.tool()
    async def count(text: str, ctx: Context) -> str:
        """Count the words of the text."""
        words = text.split()
        for done, word in enumerate(words, 1):
            await ctx.report_progress(done, len(words), f"read {word}")
        return str(len(words))

    return server


async def test_progress_of_an_mcp_server_inside_the_client_reaches_the_agent(
    tmp_path: Path,
) -> None:
    """The server's progress notifications go back to the agent as `mcp/message`
    notifications and reach its MCP client session (the tool call's progress callback)."""
    pytest.importorskip("mcp")
    from acpstack.schema import v1_unstable as acpu

    client = ClientRuntime()
    declaration = client.mcp_host.add("tools", counting_server())
    async with spawn_agent(AGENT, client, unstable=True):
        await client.initialize()
        sid = (await client.new_session(str(tmp_path), mcp_servers=[declaration])).session_id
        await client.prompt(sid, "mcp-progress two words")
        assert said(client, sid) == (
            "progress=[(1.0, 2.0, 'read two'), (2.0, 2.0, 'read words')] result=2"
        )
        # One for no active request (late, or made up) is dropped: nothing breaks.
        stray = acpu.MessageMcpNotification(
            server_id=declaration.server_id,
            request_id="no-such-request",
            method="notifications/progress",
            params={"progressToken": 1, "progress": 1},
        )
        await client.agent.mcp_message_notification(stray)
        await client.prompt(sid, "mcp-progress three more words")
        assert said(client, sid).endswith("(3.0, 3.0, 'read words')] result=3")
