"""Requests that activate, stop or remove a session run one at a time per session id.

Found by the fuzzer (`python -m tools.fuzz --target agent`): a `session/delete` waits for
the session's turn to end; a `session/resume` of the same session that arrived meanwhile
found it still stored and made it active again, and the delete then removed it from the
store under the active session. Every later prompt in it was answered -32603 (the store
raised KeyError). Now the resume waits for the delete and is answered -32002; so do a
`session/load` and (unstable) `session/archive`, which were open to the same race.

The agent and client are the real runtimes over an in-memory pipe: the race needs the
turn to be held in the middle of unwinding, which the agent below does on purpose.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from acpstack import RequestError
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import AgentPeer, Client
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu
from acpstack.testing import connected_pair
from acpstack.wire import RESOURCE_NOT_FOUND

pytestmark = pytest.mark.timeout(20)


class SlowToStop(SessionAgent):
    """A turn that, once cancelled, takes until `may_stop` to unwind (as one that releases
    a terminal does); `arrived` is set when a resume, load or archive reaches the agent."""

    def __init__(self) -> None:
        super().__init__(store=MemorySessionStore())
        self.running = asyncio.Event()
        self.stopping = asyncio.Event()
        self.may_stop = asyncio.Event()
        self.arrived = asyncio.Event()

    async def prompt(self, turn: Turn) -> acp.StopReason:
        self.running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stopping.set()
            await asyncio.shield(self.may_stop.wait())
            raise
        return "end_turn"

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        self.arrived.set()
        return await super().session_resume(params)

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        self.arrived.set()
        return await super().session_load(params)

    async def session_archive(
        self, params: acpu.ArchiveSessionRequest
    ) -> acpu.ArchiveSessionResponse:
        self.arrived.set()
        return await super().session_archive(params)


def text(words: str) -> list[acp.ContentBlock]:
    return [acp.TextContent(text=words)]


def racing_request(peer: AgentPeer, method: str, sid: str) -> Awaitable[object]:
    if method == "resume":
        return peer.session_resume(acp.ResumeSessionRequest(cwd="/", session_id=sid))
    if method == "load":
        return peer.session_load(acp.LoadSessionRequest(cwd="/", session_id=sid, mcp_servers=[]))
    return peer.session_archive(acpu.ArchiveSessionRequest(session_id=sid))


@pytest.mark.parametrize("method", ["resume", "load", "archive"])
async def test_a_request_during_a_delete_finds_the_session_gone(method: str) -> None:
    agent = SlowToStop()
    async with connected_pair(agent, Client(), unstable=method == "archive") as pair:
        peer = pair.agent
        await peer.initialize(acp.InitializeRequest(protocol_version=1))
        sid = (await peer.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
        turn = asyncio.create_task(peer.session_prompt(acp.PromptRequest(sid, text("go"))))
        await asyncio.wait_for(agent.running.wait(), 10)
        delete = asyncio.create_task(peer.session_delete(acp.DeleteSessionRequest(sid)))
        await asyncio.wait_for(agent.stopping.wait(), 10)  # the delete waits for the turn
        racing = asyncio.ensure_future(racing_request(peer, method, sid))
        await asyncio.wait_for(agent.arrived.wait(), 10)
        agent.may_stop.set()

        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        await asyncio.wait_for(delete, 10)
        with pytest.raises(RequestError) as raced:
            await asyncio.wait_for(racing, 10)
        assert raced.value.code == RESOURCE_NOT_FOUND
        assert sid not in agent.sessions
        with pytest.raises(RequestError) as prompted:
            await peer.session_prompt(acp.PromptRequest(sid, text("again")), timeout=10)
        assert prompted.value.code == RESOURCE_NOT_FOUND
        # The connection goes on: a new session takes prompts.
        other = (await peer.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
        assert other != sid
        assert agent.store.get(sid) is None
