"""The `on_session_start` hook belongs to its session: when the session stops (here, the
client leaves), the hook is cancelled and waited for, so its own clean-up has finished by
the time the agent is done with the session, and no task is left running behind it."""

from __future__ import annotations

import asyncio

import pytest

from acpstack.agent import MemorySessionStore, Session, SessionAgent, Turn
from acpstack.client import Client
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair


class SlowStart(SessionAgent):
    def __init__(self) -> None:
        super().__init__(store=MemorySessionStore())
        self.started = asyncio.Event()
        self.cleaned_up = False

    async def on_session_start(self, session: Session) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()  # a hook that would run forever
        finally:
            await asyncio.sleep(0.05)  # clean-up that takes a few loop turns
            self.cleaned_up = True

    async def prompt(self, turn: Turn) -> acp.StopReason:
        return "end_turn"


async def test_the_start_hook_is_cancelled_and_awaited_when_the_client_leaves() -> None:
    agent = SlowStart()
    async with connected_pair(agent, Client()) as pair:
        await pair.agent.initialize(acp.InitializeRequest(protocol_version=1))
        await pair.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        await asyncio.wait_for(agent.started.wait(), 10)
    assert agent.cleaned_up
    leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not [t for t in leftovers if "_session_started" in repr(t.get_coro())]


class QuickStart(SessionAgent):
    """A start hook that finishes at once (or fails, when `fail` is set)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(store=MemorySessionStore())
        self.fail = fail

    async def on_session_start(self, session: Session) -> None:
        if self.fail:
            raise RuntimeError("the start hook broke")

    async def prompt(self, turn: Turn) -> acp.StopReason:
        return "end_turn"


@pytest.mark.parametrize("fail", [False, True])
async def test_a_finished_start_hook_is_not_kept_by_its_session(
    fail: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """An open session holds no finished Task (one per session adds up over thousands of
    sessions); a hook that failed is still reported in the log."""
    agent = QuickStart(fail)
    async with connected_pair(agent, Client()) as pair:
        await pair.agent.initialize(acp.InitializeRequest(protocol_version=1))
        new = await pair.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        session = agent.sessions[new.session_id]
        hook = session.start_task
        if hook is not None:
            await asyncio.wait_for(asyncio.wait([hook]), 10)
        assert session.start_task is None
        assert hook is None or hook.done()
    failures = [r for r in caplog.records if "on_session_start failed" in r.getMessage()]
    assert len(failures) == (1 if fail else 0)
