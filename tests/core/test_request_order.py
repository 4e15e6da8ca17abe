"""A request starts only after the notifications of its session that came before it.

Requests start eagerly (no loop turn when nothing is waiting); notifications are handled in
order by a worker per session. Found when requests started eagerly on 3.11 too (on 3.12
they already did): a `nes/suggest` overtook the `document/did_change` sent before it and
suggested on the old text. The same holds for a `session/cancel` and the next prompt.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acpstack.agent import Agent, connect_agent
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair


class Ordered(Agent):
    """`session/cancel` waits for `gate`; every handler notes when it ran."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.gate = asyncio.Event()

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        await self.gate.wait()
        self.seen.append(f"cancel {params.session_id}")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        self.seen.append(f"prompt {params.session_id}")
        return acp.PromptResponse(stop_reason="end_turn")


def message(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


def prompt(rid: int, sid: str) -> bytes:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    return message(id=rid, method="session/prompt", params=params)


def cancel(sid: str) -> bytes:
    return message(method="session/cancel", params={"sessionId": sid})


async def exchange(agent: Ordered, chunk: bytes, answers_expected: int) -> dict[int, Any]:
    """Initialize, write `chunk` in one piece, release the gate once the slow notification
    runs, and return the answers by id."""
    agent_side, raw = memory_pair()
    answers: dict[int, Any] = {}
    arrived = asyncio.Event()
    pending = b""

    def collect(data: bytes) -> None:
        nonlocal pending
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            answer = json.loads(line)
            answers[answer["id"]] = answer
        arrived.set()

    raw.start_reading(collect, lambda: None)
    async with connect_agent(agent, agent_side):
        raw.write(message(id=0, method="initialize", params={"protocolVersion": 1}))
        async with asyncio.timeout(10):
            while 0 not in answers:
                arrived.clear()
                await arrived.wait()
            raw.write(chunk)
            while len(answers) < answers_expected:
                arrived.clear()
                if len(answers) == answers_expected - 1:
                    agent.gate.set()  # everything not held has been answered
                await arrived.wait()
    return answers


async def test_a_request_waits_for_the_notifications_of_its_session_sent_before_it() -> None:
    agent = Ordered()
    chunk = cancel("s1") + prompt(1, "s1") + prompt(2, "s2")
    answers = await exchange(agent, chunk, 3)
    assert answers[1]["result"] == answers[2]["result"] == {"stopReason": "end_turn"}
    # s2 has nothing queued: it ran at once. s1's prompt waited for s1's cancel.
    assert agent.seen == ["prompt s2", "cancel s1", "prompt s1"]


async def test_a_request_cancelled_while_it_waits_is_answered_once_and_never_runs() -> None:
    agent = Ordered()
    chunk = (
        cancel("s1")
        + prompt(1, "s1")
        + message(method="$/cancel_request", params={"requestId": 1})
        + prompt(2, "s2")
    )
    answers = await exchange(agent, chunk, 3)
    assert answers[1]["error"]["code"] == -32800
    assert agent.seen == ["prompt s2", "cancel s1"]
