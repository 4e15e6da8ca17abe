"""Several clients on one session (`session/attach`, after the multi-client attach RFD):
the owner's client, a controller and an observer on three connections to one server
(real sockets on 127.0.0.1, both profiles). Everyone sees the session's stream; the
agent's permission request goes to the owner and the controller, the first answer wins
and the other is told it is settled; a controller may prompt, an observer may not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
from _serving import running

import acpstack.events as events
from acpstack import RequestError
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import ClientRuntime, connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

pytestmark = pytest.mark.timeout(60)
STORE = MemorySessionStore()


class AskingAgent(SessionAgent):
    """'ask' asks permission for a tool call and says what was decided; else echoes."""

    def __init__(self) -> None:
        super().__init__(store=STORE)

    async def prompt(self, turn: Turn) -> acp.StopReason:
        if turn.text == "ask":
            tool = await turn.start_tool("Edit a file", kind="edit")
            decision = await turn.request_permission(tool)
            await turn.say(f"decision: {decision.decision}")
        else:
            await turn.say(f"echo: {turn.text}")
        return "end_turn"


class Watcher:
    """A client runtime that records the chunks it sees and the permission requests it is
    asked; `answer` is what it answers (None: it never does, until cancelled)."""

    def __init__(self, answer: str | None) -> None:
        self.chunks: list[str] = []
        self.asked = 0
        self.cancelled = 0
        self.answer = answer
        self.runtime = ClientRuntime(ask=self._ask, on_update=self._update)

    def _update(self, _sid: str, update: Any) -> None:
        if isinstance(update, events.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            self.chunks.append(update.content.text)

    async def _ask(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.asked += 1
        if self.answer is None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return next(o for o in request.options if o.option_id == self.answer)


@asynccontextmanager
async def three_clients(scheme: str) -> AsyncIterator[tuple[Watcher, Watcher, Watcher, str]]:
    async with running(AgentServer(AskingAgent)) as http_url:
        url = http_url.replace("http://", f"{scheme}://")
        owner, controller, observer = Watcher(None), Watcher("allow_once"), Watcher("allow_once")
        async with AsyncExitStack() as stack:
            for watcher in (owner, controller, observer):
                await stack.enter_async_context(connect_remote(url, watcher.runtime))
                await watcher.runtime.initialize()
            session = (await owner.runtime.new_session("/tmp")).session_id
            for watcher, role in ((controller, "controller"), (observer, "observer")):
                await watcher.runtime.attach_session(session, "/tmp", role=role)
            yield owner, controller, observer, session


async def until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_first_answer_wins_and_everyone_sees_the_turn(scheme: str) -> None:
    async with three_clients(scheme) as (owner, controller, observer, session):
        response = await asyncio.wait_for(owner.runtime.prompt(session, "ask"), 20)
        assert response.stop_reason == "end_turn"
        assert owner.chunks == ["decision: allow"]  # the controller's answer won
        await until(lambda: observer.chunks and controller.chunks)
        assert controller.chunks == observer.chunks == ["decision: allow"]
        assert controller.asked == 1 and observer.asked == 0  # observers are not asked
        # the owner's question was withdrawn ($/cancel_request): cancelled while it was
        # asked, or before its handler even started
        await until(lambda: owner.asked == owner.cancelled)


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_controller_may_prompt_and_an_observer_may_not(scheme: str) -> None:
    async with three_clients(scheme) as (owner, controller, observer, session):
        result = await asyncio.wait_for(controller.runtime.prompt(session, "from afar"), 20)
        assert result.stop_reason == "end_turn"
        await until(lambda: "echo: from afar" in owner.chunks)
        with pytest.raises(RequestError, match="observer"):
            await observer.runtime.prompt(session, "from an observer")


async def test_attaching_to_a_session_nobody_holds_is_refused() -> None:
    async with running(AgentServer(AskingAgent)) as url:
        watcher = Watcher(None)
        async with connect_remote(url, watcher.runtime):
            await watcher.runtime.initialize()
            with pytest.raises(RequestError, match="no live session") as refused:
                await watcher.runtime.attach_session("nope", "/tmp")
            assert refused.value.code == -32002
            with pytest.raises(RequestError, match="role"):
                await watcher.runtime.agent.connection.request(
                    "_acpstack/session/attach", {"sessionId": "nope", "role": "boss"}
                )


async def test_when_the_owner_answers_first_the_controller_is_told() -> None:
    async with three_clients("ws") as (owner, controller, observer, session):
        owner.answer, controller.answer = "reject_once", None
        response = await asyncio.wait_for(owner.runtime.prompt(session, "ask"), 20)
        assert response.stop_reason == "end_turn"
        assert owner.chunks == ["decision: reject"]
        await until(lambda: controller.asked == controller.cancelled)
        assert observer.asked == 0
