"""The model's history: stored with the session, restored by load/resume/fork in a new
`acpstack agent` process, trimmed to the context window without splitting tool rounds."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import spawn_agent
from acpstack.agent import SqliteSessionStore
from acpstack.cli._llm_history import INTERRUPTED, LLM_EVENT, estimate_tokens, fit, units
from acpstack.client import ClientRuntime
from acpstack.schema import v1_unstable as acpu

sys.path.insert(0, str(Path(__file__).parent))
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

ENV = {"FAKE_KEY": "sk-history"}
PLAN = json.dumps({"entries": [{"content": "Remember the name", "status": "completed"}]})


def say(text: str) -> list[tuple[Any, ...]]:
    return [("text", text), ("finish", "stop")]


def stored_messages(store: Path, session_id: str) -> list[dict[str, Any]]:
    with SqliteSessionStore(store) as db:  # (a row may hold several events)
        return [json.loads(e.payload) for e in db.events(session_id) if e.kind == LLM_EVENT]


def call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "update_plan", "arguments": "{}"},
    }


# -- pure functions ---------------------------------------------------------------------


def test_units_keep_tool_rounds_together_and_repair_broken_ones() -> None:
    user = {"role": "user", "content": "u"}
    round_ = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]}
    result_b = {"role": "tool", "tool_call_id": "b", "content": "B"}
    orphan = {"role": "tool", "tool_call_id": "zzz", "content": "?"}
    grouped = units([orphan, user, round_, result_b, {"role": "assistant", "content": "done"}])
    assert grouped[0] == [user]
    assert grouped[1][0] is round_
    assert [m["tool_call_id"] for m in grouped[1][1:]] == ["a", "b"]  # in call order, one per call
    assert grouped[1][1]["content"] == INTERRUPTED and grouped[1][2] is result_b
    assert grouped[2] == [{"role": "assistant", "content": "done"}]


def test_fit_keeps_the_newest_units_the_system_prompt_and_the_task() -> None:
    system = {"role": "system", "content": "s"}
    old = [{"role": "user", "content": "x" * 400}, {"role": "assistant", "content": "y" * 400}]
    task = {"role": "user", "content": "the task"}
    round_ = [
        {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "z" * 200},
    ]
    rounds = [
        [
            {**m, "tool_call_id": f"c{i}"}
            if m["role"] == "tool"
            else {**m, "tool_calls": [call(f"c{i}")]}
            for m in round_
        ]
        for i in range(5)
    ]
    history = [*old, task, *(m for r in rounds for m in r)]
    everything = fit(system, history, 100_000)
    assert everything == [system, *history]
    per_round = sum(estimate_tokens(m) for m in rounds[0])
    budget = estimate_tokens(system) + estimate_tokens(task) + 2 * per_round + 5
    sent = fit(system, history, budget)
    assert sent[0] == system and sent[1] == task  # the task stays even when older units go
    assert sent[2:] == [m for r in rounds[-2:] for m in r]  # the newest two whole rounds
    assert sum(estimate_tokens(m) for m in sent) <= budget


def test_images_count_as_a_fixed_estimate() -> None:
    image = {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400_000}}
        ],
    }
    assert estimate_tokens(image) < 1100


# -- real processes ---------------------------------------------------------------------


@pytest.mark.parametrize("reopen", ["load", "resume"])
async def test_a_second_process_sends_the_first_turns_messages(tmp_path: Path, reopen: str) -> None:
    store = tmp_path / "store.sqlite3"
    with FakeOpenAI() as fake:
        command = agent_command(fake.url, str(store))
        fake.scripts += [
            [("tool", 0, "call_plan", "update_plan", [PLAN]), ("finish", "tool_calls")],
            say("Hello Ada."),
            say("You are Ada."),
        ]
        first = ClientRuntime()
        async with spawn_agent(command, first, env=ENV):
            await first.initialize()
            sid = (await first.new_session(str(tmp_path))).session_id
            await first.prompt(sid, "my name is Ada")
        second = ClientRuntime()
        async with spawn_agent(command, second, env=ENV):
            await second.initialize()
            if reopen == "load":
                await second.load_session(sid, str(tmp_path))
            else:
                await second.resume_session(sid, str(tmp_path))
            await second.prompt(sid, "what is my name?")
        sent = fake.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[1]["content"] == "my name is Ada" and sent[4]["content"] == "Hello Ada."
    assert sent[2]["tool_calls"][0]["id"] == "call_plan" and sent[3]["tool_call_id"] == "call_plan"
    assert sent[5]["content"] == "what is my name?"
    assert [m["role"] for m in stored_messages(store, sid)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


async def test_a_fork_carries_the_history_and_the_original_does_not_see_the_fork(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.sqlite3"
    with FakeOpenAI() as fake:
        command = agent_command(fake.url, str(store))
        fake.scripts += [say("Hello Ada."), say("Forked answer."), say("Original answer.")]
        first = ClientRuntime()
        async with spawn_agent(command, first, env=ENV):
            await first.initialize()
            sid = (await first.new_session(str(tmp_path))).session_id
            await first.prompt(sid, "my name is Ada")
        second = ClientRuntime()
        async with spawn_agent([*command, "--unstable"], second, env=ENV, unstable=True) as conn:
            await second.initialize()
            forked = await conn.connection.request(
                "session/fork",
                acpu.ForkSessionRequest(session_id=sid, cwd=str(tmp_path), mcp_servers=[]),
            )
            second.register_session(forked.session_id, str(tmp_path))
            await second.prompt(forked.session_id, "in the fork")
            await second.load_session(sid, str(tmp_path))
            await second.prompt(sid, "in the original")
        in_fork, in_original = fake.requests[1]["messages"], fake.requests[2]["messages"]
    assert [m.get("content") for m in in_fork[1:]] == [
        "my name is Ada",
        "Hello Ada.",
        "in the fork",
    ]
    assert [m.get("content") for m in in_original[1:]] == [
        "my name is Ada",
        "Hello Ada.",
        "in the original",
    ]


async def test_kill_9_loses_at_most_the_step_in_flight(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    with FakeOpenAI() as fake:
        command = agent_command(fake.url, str(store))
        fake.scripts += [
            [("tool", 0, "call_plan", "update_plan", [PLAN]), ("finish", "tool_calls")],
            [("text", "Half an ans"), ("hang",)],
            say("Recovered."),
        ]
        first = ClientRuntime()
        async with spawn_agent(command, first, env=ENV) as conn:
            await first.initialize()
            sid = (await first.new_session(str(tmp_path))).session_id
            turn = asyncio.create_task(first.prompt(sid, "plan it"))
            assert await asyncio.to_thread(fake.wait_requests, 2)
            os.kill(conn.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
            with pytest.raises(Exception):  # noqa: B017 - the connection dies with the agent
                await asyncio.wait_for(turn, 10)
        second = ClientRuntime()
        async with spawn_agent(command, second, env=ENV):
            await second.initialize()
            await second.load_session(sid, str(tmp_path))
            await second.prompt(sid, "go on")
        sent = fake.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["tool_call_id"] == "call_plan" and sent[3]["content"] == "plan shown to the user"


async def test_trimming_sends_whole_tool_rounds_and_keeps_everything_stored(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    big = "word " * 300  # about 375 tokens of tool output per round
    with FakeOpenAI() as fake:
        command = agent_command(fake.url, str(store), "--context-window", "4000")
        for i in range(6):
            cmd = json.dumps({"command": "echo", "args": [f"round-{i}", big]})
            fake.scripts.append(
                [("tool", 0, f"call_{i}", "run_command", [cmd]), ("finish", "tool_calls")]
            )
        fake.scripts.append(say("All done."))
        fake.scripts.append(say("Second turn."))

        async def allow(request: Any) -> Any:
            return next(o for o in request.options if o.kind == "allow_once")

        runtime = ClientRuntime(ask=allow)
        async with spawn_agent(command, runtime, env=ENV):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(sid, "run six rounds")
            await runtime.prompt(sid, "and now?")
        last = fake.requests[-1]["messages"]
    stored = stored_messages(store, sid)
    assert (
        len(stored) == 1 + 6 * 2 + 1 + 1 + 1
    )  # user, 6 rounds, answer, user, answer: nothing dropped
    assert len(last) < len(stored)  # the request was trimmed
    assert last[0]["role"] == "system" and last[-1] == {"role": "user", "content": "and now?"}
    for index, message in enumerate(last):
        if message["role"] == "tool":
            assert last[index - 1].get("tool_calls", [{}])[0].get("id") == message["tool_call_id"]
        if message.get("tool_calls"):
            assert (
                last[index + 1]["role"] == "tool"
                and last[index + 1]["tool_call_id"] == message["tool_calls"][0]["id"]
            )
    assert "run six rounds" not in [
        m.get("content") for m in last
    ]  # an older task went, the newest stayed
