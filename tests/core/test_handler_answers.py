"""What our own handlers answer is checked before it is sent (a bad answer is -32603 to the
peer and an error in the erring side's log), and a late answer to a request we cancelled
ourselves is expected traffic (debug), while a truly unknown id stays a warning."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import Client, RequestError, spawn_agent
from acpstack.agent import Agent, connect_agent
from acpstack.client import connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import StreamTransport

BAD_AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "bad_answer_agent.py")]


class Quiet(Client):
    async def session_update(self, params: acp.SessionNotification) -> None:
        pass


def prompt(text: str) -> acp.PromptRequest:
    return acp.PromptRequest(session_id="s1", prompt=[acp.TextContent(text=text)])


async def test_an_invalid_answer_is_refused_on_the_side_that_made_it() -> None:
    stderr: list[str] = []
    async with spawn_agent(BAD_AGENT, Quiet(), stderr_callback=stderr.append) as conn:
        await conn.agent.initialize(acp.InitializeRequest(protocol_version=1))
        await conn.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        with pytest.raises(RequestError) as bad_reason:
            await asyncio.wait_for(conn.agent.session_prompt(prompt("finished")), 30)
        with pytest.raises(RequestError) as bad_dict:
            await asyncio.wait_for(
                conn.agent.session_new(acp.NewSessionRequest(cwd="/dict", mcp_servers=[])), 30
            )
        # The connection goes on: a valid answer still arrives.
        good = await asyncio.wait_for(conn.agent.session_prompt(prompt("end_turn")), 30)
    assert good.stop_reason == "end_turn"
    assert bad_reason.value.code == bad_dict.value.code == -32603
    log = "".join(stderr)
    # The agent's log names the handler and the field; the peer only gets a correlation id.
    assert "`session_prompt` handler of session/prompt returned 'finished' for `stopReason`" in log
    assert "`session_new` handler of session/new returned" in log
    assert "at `$.sessionId`" in log
    for err in (bad_reason.value, bad_dict.value):
        assert isinstance(err.data, dict)
        correlation = err.data["correlationId"]
        assert correlation in log
        assert "stopReason" not in str(err.data)


class WaitsOnTheClient(Agent):
    """`session/prompt` waits on the client's `terminal/wait_for_exit` until the client
    cancels the turn; then the agent cancels its own wait, as a real agent does."""

    def __init__(self) -> None:
        self.turn: asyncio.Task[Any] | None = None

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        self.turn = asyncio.current_task()
        wait = asyncio.ensure_future(
            self.client.terminal_wait_for_exit(
                acp.WaitForTerminalExitRequest(session_id="s1", terminal_id="t1")
            )
        )
        try:
            await asyncio.shield(wait)
        except asyncio.CancelledError:
            wait.cancel()  # sends $/cancel_request; the client answers -32800 later
            with pytest.raises(asyncio.CancelledError):
                await wait
            return acp.PromptResponse(stop_reason="cancelled")
        return acp.PromptResponse(stop_reason="end_turn")

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        if self.turn is not None:
            self.turn.cancel()


class TerminalThatNeverExits(Quiet):
    def __init__(self) -> None:
        self.waiting = asyncio.Event()

    async def terminal_wait_for_exit(
        self, params: acp.WaitForTerminalExitRequest
    ) -> acp.WaitForTerminalExitResponse:
        self.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def wait_for_record(caplog: pytest.LogCaptureFixture, text: str) -> None:
    async with asyncio.timeout(30):
        while not any(text in r.getMessage() for r in caplog.records):
            await asyncio.sleep(0.01)


async def test_the_late_answer_to_our_own_cancelled_request_is_no_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="acpstack.wire")
    left, right = socket.socketpair()
    agent = WaitsOnTheClient()
    client = TerminalThatNeverExits()
    caps = acp.ClientCapabilities(terminal=True)
    agent_streams = await asyncio.open_connection(sock=left)
    client_streams = await asyncio.open_connection(sock=right)
    agent_conn = connect_agent(agent, StreamTransport(*agent_streams))
    client_conn = connect_client(client, StreamTransport(*client_streams))
    async with agent_conn, client_conn.connection:
        peer = client_conn.agent
        await peer.initialize(acp.InitializeRequest(protocol_version=1, client_capabilities=caps))
        await peer.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        turn = asyncio.ensure_future(peer.session_prompt(prompt("run")))
        await asyncio.wait_for(client.waiting.wait(), 30)
        await peer.session_cancel(acp.CancelNotification(session_id="s1"))
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
        await wait_for_record(caplog, "which we cancelled")
        # A response nobody asked for is still a warning.
        client_conn.connection._send(b'{"jsonrpc":"2.0","id":9999,"result":{}}\n')
        await wait_for_record(caplog, "unknown id 9999")
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == ["ignored a response with unknown id 9999"]
    late = [r for r in caplog.records if "which we cancelled" in r.getMessage()]
    assert len(late) == 1 and late[0].levelno == logging.DEBUG
