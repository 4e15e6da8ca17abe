"""Resuming over streamable HTTP, probed with raw requests over a real socket: numbered
events, `Last-Event-ID` (and its refusals), and a POST sent again (`Acp-Retry`) acting
once."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from _probe import INIT, Probe, prompt
from _serving import load_scripted, running

from acpstack.server import AgentServer, ServerLimits

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def probe() -> AsyncIterator[Probe]:
    app = AgentServer(load_scripted().ScriptedAgent, limits=ServerLimits(keepalive_interval=0.2))
    async with running(app) as url:
        probe = Probe(url)
        yield probe
        await probe.aclose()


def positions(raw: bytes) -> list[int]:
    """The position of each event on a stream: its id, or the one before it plus one."""
    found: list[int] = []
    for block in raw.split(b"\n\n"):
        if b"data:" not in block:
            continue
        match = re.search(rb"^id: (\d+)$", block, re.M)
        found.append(int(match.group(1)) if match else found[-1] + 1)
    return found


def chunk_texts(messages: list[dict[str, object]]) -> list[object]:
    return [m["params"]["update"]["content"]["text"] for m in messages if "params" in m]  # type: ignore[index]


async def test_the_answer_to_initialize_says_the_connection_can_be_resumed(probe: Probe) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(probe.url, json=INIT)
    assert response.headers["acp-resumable"] == "1"


async def test_a_stream_opened_again_after_an_id_gets_every_later_message(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream() as events:
        session = await probe.new_session(events)
        async with probe.stream(session) as first:
            assert (
                await probe.post(prompt(2, session, "stream 3"), session=session)
            ).status_code == 202
            messages = await first.next(4)
        assert positions(first.raw) == [1, 2, 3, 4]
        assert messages[3]["id"] == 2
        async with probe.stream(session, last_event_id="2") as again:
            replayed = await again.next(2)
        assert chunk_texts(replayed) == ["00000002"]
        assert replayed[1] == messages[3]  # the answer, once more
        assert positions(again.raw) == [3, 4]


async def test_a_resume_the_server_cannot_serve_is_refused(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream(last_event_id="nine", expect=400):
        pass
    async with probe.stream(last_event_id="9", expect=410) as refused:
        assert b"never sent" in await refused.response.aread()


async def test_a_resumed_stream_takes_over_from_a_receiver_still_attached(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream() as events:
        session = await probe.new_session(events)
        async with probe.stream(session) as old:
            assert (
                await probe.post(prompt(2, session, "stream 1"), session=session)
            ).status_code == 202
            await old.next(2)
            # the old one never left (a half-open socket): a plain GET is refused, a resume is not
            async with probe.stream(session, expect=409):
                pass
            async with probe.stream(session, last_event_id="2") as new:
                assert (
                    await probe.post(prompt(3, session, "stream 1"), session=session)
                ).status_code == 202
                messages = await new.next(2)
    assert messages[1]["id"] == 3


async def test_a_request_sent_again_as_a_retry_runs_once(probe: Probe) -> None:
    await probe.initialize()
    async with probe.stream() as events:
        session = await probe.new_session(events)
        async with probe.stream(session) as stream:
            turn = prompt(2, session, "stream 2")
            assert (await probe.post(turn, session=session)).status_code == 202
            assert (await probe.post(turn, session=session, retry=True)).status_code == 202
            assert (
                await probe.post(prompt(3, session, "stream 1"), session=session)
            ).status_code == 202
            messages = await stream.until(lambda m: m.get("id") == 3)
    # one turn for id 2 (two chunks, one answer), then id 3's: nothing ran twice
    assert [m.get("id") for m in messages if "id" in m] == [2, 3]
    assert chunk_texts(messages) == ["00000000", "00000001", "00000000"]
