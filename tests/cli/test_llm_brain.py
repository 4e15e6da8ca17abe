"""The reference agent's LLM backend (`acpstack agent --model`, a real process) against a fake
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

import acpstack.events as events
from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).parent))
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402


def agent(fake: FakeOpenAI, tmp_path: Path, *extra: str) -> list[str]:
    return agent_command(
        fake.url, str(tmp_path / "store.sqlite3"), "--context-window", "100000", *extra
    )


def env() -> dict[str, str]:
    return {"FAKE_KEY": "sk-test-123"}


async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
    return next(o for o in request.options if o.kind == "allow_once")


async def reject(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
    return next(o for o in request.options if o.kind == "reject_once")


class Updates:
    def __init__(self) -> None:
        self.items: list[object] = []
        self.arrived = asyncio.Event()  # set on each update

    def __call__(self, sid: str, update: object) -> None:
        self.items.append(update)
        self.arrived.set()

    async def until(self, kind: type, timeout: float = 10) -> None:
        """Wait (on the updates themselves, not a timer) until one of `kind` arrived."""
        async with asyncio.timeout(timeout):
            while not self.of(kind):
                self.arrived.clear()
                await self.arrived.wait()

    def of(self, kind: type) -> list:
        return [u for u in self.items if isinstance(u, kind)]


async def test_streaming_text_reasoning_and_usage(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.scripts.append(
            [
                ("reasoning", "Let me think. "),
                ("text", "Hello"),
                ("text", ", world"),
                ("text", "!"),
                ("finish", "stop"),
                ("usage", 120, 30),
            ]
        )
        updates = Updates()
        runtime = ClientRuntime(on_update=updates)
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            result = await runtime.prompt(sid, "say hello")
            assert result.stop_reason == "end_turn"
            chunks = [u.content.text for u in updates.of(events.AgentMessageChunk)]
            assert chunks == ["Hello", ", world", "!"]
            assert [u.content.text for u in updates.of(events.AgentThoughtChunk)] == [
                "Let me think. "
            ]
            usage = updates.of(events.UsageUpdate)
            assert usage and (usage[-1].used, usage[-1].size) == (150, 100000)
        request = fake.requests[0]
        assert request["model"] == "fake-model" and request["stream"] is True
        assert request["messages"][-1] == {"role": "user", "content": "say hello"}
        assert {t["function"]["name"] for t in request["tools"]} >= {
            "read_file",
            "edit_file",
            "run_command",
            "update_plan",
        }
        assert fake.auth_headers[0] == "Bearer sk-test-123"


async def test_tool_call_edits_a_file_after_permission(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('helo')\n")
    args = json.dumps({"path": "app.py", "old_text": "helo", "new_text": "hello"})
    with FakeOpenAI() as fake:
        fake.scripts.append(
            [
                ("text", "Fixing the typo."),
                ("tool", 0, "call_1", "edit_file", [args[:10], args[10:]]),
                ("finish", "tool_calls"),
            ]
        )
        fake.scripts.append([("text", "Fixed."), ("finish", "stop")])
        asked: list[acp.RequestPermissionRequest] = []

        async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
            asked.append(request)
            return await allow(request)

        runtime = ClientRuntime(ask=ask)
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(sid, "fix the typo")
            assert (tmp_path / "app.py").read_text() == "print('hello')\n"
            diff = asked[0].tool_call.content[0]
            assert (
                isinstance(diff, acp.Diff)
                and diff.old_text == "print('helo')\n"
                and diff.new_text == "print('hello')\n"
            )
            tool = next(iter(runtime.sessions[sid].state.tool_calls.values()))
            assert tool.status == "completed" and tool.kind == "edit"
            assert runtime.sessions[sid].state.last_agent_message.text.endswith("Fixed.")  # type: ignore[union-attr]
        second = fake.requests[1]["messages"]
        assert second[-2]["tool_calls"][0]["function"] == {"name": "edit_file", "arguments": args}
        assert second[-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": f"{tmp_path / 'app.py'} written.",
        }


async def test_refused_edit_leaves_the_file_and_tells_the_model(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    args = json.dumps({"path": "app.py", "content": "x = 2\n"})
    with FakeOpenAI() as fake:
        fake.scripts.append([("tool", 0, "c1", "write_file", [args]), ("finish", "tool_calls")])
        fake.scripts.append([("text", "OK."), ("finish", "stop")])
        runtime = ClientRuntime(ask=reject)
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(sid, "change x")
            assert (tmp_path / "app.py").read_text() == "x = 1\n"
            assert next(iter(runtime.sessions[sid].state.tool_calls.values())).status == "failed"
        assert "refused" in fake.requests[1]["messages"][-1]["content"]


async def test_run_command_and_plan(tmp_path: Path) -> None:
    plan = json.dumps({"entries": [{"content": "Run it", "status": "in_progress"}]})
    cmd = json.dumps({"command": "echo", "args": ["from-the-terminal"]})
    with FakeOpenAI() as fake:
        fake.scripts.append(
            [
                ("tool", 0, "p", "update_plan", [plan]),
                ("tool", 1, "r", "run_command", [cmd]),
                ("finish", "tool_calls"),
            ]
        )
        fake.scripts.append([("text", "Done."), ("finish", "stop")])
        runtime = ClientRuntime(ask=allow)
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(sid, "run it")
            state = runtime.sessions[sid].state
            assert [(e.content, e.status) for e in state.plan] == [("Run it", "in_progress")]
            run = [t for t in state.tool_calls.values() if t.kind == "execute"][0]
            assert run.status == "completed" and isinstance(run.content[0], acp.Terminal)
        tool_results = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
        assert tool_results[1]["content"].startswith("exit code 0\nfrom-the-terminal")


async def test_cancel_mid_stream(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.scripts.append([("text", "Working on it"), ("hang",)])
        updates = Updates()
        runtime = ClientRuntime(on_update=updates)
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            turn = asyncio.create_task(runtime.prompt(sid, "long task"))
            await updates.until(events.AgentMessageChunk)
            await runtime.cancel(sid)
            result = await asyncio.wait_for(turn, 10)
            assert result.stop_reason == "cancelled"
            assert await asyncio.to_thread(fake.disconnected.wait, 10)


async def test_http_error_is_reported_without_the_key(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.scripts.append([("status", 401, '{"error": {"message": "bad key sk-test-123"}}')])
        runtime = ClientRuntime()
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            with pytest.raises(RequestError) as info:
                await runtime.prompt(sid, "hi")
            text = runtime.sessions[sid].state.last_agent_message.text  # type: ignore[union-attr]
            assert "HTTP 401" in text and "FAKE_KEY" in text and "sk-test-123" not in text
            assert info.value.data == {
                "reason": "model_error",
                "kind": "unauthorized",
                "status": 401,
            }
            assert "HTTP 401" in info.value.message and "sk-test-123" not in info.value.message


async def test_each_http_failure_says_what_to_do(tmp_path: Path) -> None:
    cases = [
        (404, "not_found", "Check the model name (--model fake-model)"),
        (429, "rate_limited", "wait and try again"),
        (500, "server_error", "try again later"),
        (503, "server_error", "try again later"),
        (400, "bad_request", "--context-window"),
    ]
    with FakeOpenAI() as fake:
        fake.scripts += [[("status", status, "upstream says no")] for status, _kind, _hint in cases]
        runtime = ClientRuntime()
        async with spawn_agent(agent(fake, tmp_path), runtime, env=env()):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            for status, kind, hint in cases:
                with pytest.raises(RequestError) as info:
                    await runtime.prompt(sid, "hi")
                assert info.value.data == {"reason": "model_error", "kind": kind, "status": status}
                text = runtime.sessions[sid].state.last_agent_message.text  # type: ignore[union-attr]
                assert (
                    f"HTTP {status}: upstream says no" in text
                    and hint in text
                    and hint in info.value.message
                )
