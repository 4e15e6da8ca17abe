"""ClientRuntime with v1 and v2 agents: one model of a session (the version-neutral events)
whatever the wire.

Real agent processes over real pipes (tests/v2/peers/command_agent.py, versions chosen
per test), and, for agents that misbehave in ways ours never does, small v2 agents built
on the low-level `Agent` over an in-memory pair.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

import acpstack.events as ev
from acpstack import Agent, ConnectionClosed, RequestError, spawn_agent
from acpstack.agent import connect_agent
from acpstack.client import ClientRuntime, connect_client
from acpstack.schema import v1 as acp
from acpstack.schema import v2
from acpstack.transports import memory_pair

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _lines import command_agent  # noqa: E402


class Recorder(ClientRuntime):
    """Keeps what `on_update` received (events)."""

    def __init__(self, **kwargs: Any) -> None:
        self.model: list[Any] = []
        self.arrived = asyncio.Event()
        super().__init__(on_update=self._model, **kwargs)

    def _model(self, session_id: str, update: Any) -> None:
        self.model.append(update)
        self.arrived.set()

    async def until(self, condition: Callable[[], bool], timeout: float = 10) -> None:
        """Wait until `condition()` holds, checked after every update (the state is
        updated before the callbacks run)."""
        async with asyncio.timeout(timeout):
            while not condition():
                self.arrived.clear()
                await self.arrived.wait()


async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
    return request.options[0]


@asynccontextmanager
async def runtime_with(
    tmp_path: Path, versions: str, **kwargs: Any
) -> AsyncIterator[tuple[Recorder, Any]]:
    argv, env = command_agent(tmp_path / "sessions.db", versions)
    runtime = Recorder(ask=allow, **kwargs)
    async with spawn_agent(argv, runtime, env={**os.environ, **env}) as conn:
        await runtime.initialize()
        yield runtime, conn


@pytest.mark.parametrize(
    ("versions", "asked", "spoken"),
    [("1,2", 2, 2), ("1", 2, 1), ("2", 1, 2), ("1,2", 1, 1)],
    ids=["v2", "v2-client-v1-agent", "v1-client-v2-agent", "v1"],
)
async def test_one_model_whatever_the_wire(
    tmp_path: Path, versions: str, asked: int, spoken: int
) -> None:
    async with runtime_with(tmp_path, versions, protocol_version=asked) as (runtime, conn):
        assert conn.connection.protocol_version == spoken
        assert runtime.initialize_result is not None
        info = runtime.initialize_result.agent_info
        assert isinstance(info, acp.Implementation) and info.name == "v2-command-agent"
        caps = runtime.agent.capabilities
        assert caps is not None and caps.load_session is True
        sid = (await runtime.new_session(str(tmp_path))).session_id
        result = await runtime.prompt(sid, "say hi there")
        assert result.stop_reason == "end_turn"
        state = runtime.sessions[sid].state
        assert [(m.speaker, m.text) for m in state.messages] == [
            ("user", "say hi there"),
            ("thought", "thinking"),
            ("agent", "hi there"),
        ]
        assert [(e.content, e.status) for e in state.plan] == [("say it", "completed")]
        assert (state.state, state.stop_reason) == ("idle", "end_turn")
        assert state.current_mode_id == "code"  # from session/new's answer on both wires
        # The application sees the same events on both wires (a plan is v2's plan_update,
        # and v2 says when the turn ends).
        kinds = {ev.kind_of(u) for u in runtime.model}
        assert {"agent_message_chunk", "agent_thought_chunk"} <= kinds
        assert ("plan_update" if spoken == 2 else "plan") in kinds
        assert ("state_update" in kinds) == (spoken == 2)
        # A permission goes to the same policy, in the same shape.
        result = await runtime.prompt(sid, "permission")
        assert runtime.sessions[sid].state.messages[-1].text == "decision=allow"
        (tool,) = runtime.sessions[sid].state.tool_calls.values()
        assert (tool.title, tool.kind, tool.status) == ("Edit a file", "edit", "completed")
        # load_session replays the history (v2: session/resume from the start).
        again = Recorder(ask=allow, protocol_version=asked)
        argv, env = command_agent(tmp_path / "sessions.db", versions)
        async with spawn_agent(argv, again, env={**os.environ, **env}):
            await again.initialize()
            await again.load_session(sid, str(tmp_path))
            texts = [m.text for m in again.sessions[sid].state.messages]
            assert texts[:3] == ["say hi there", "thinking", "hi there"]


async def test_cancel_and_errors_end_prompt_as_on_v1(tmp_path: Path) -> None:
    async with runtime_with(tmp_path, "2", protocol_version=2) as (runtime, _):
        sid = (await runtime.new_session(str(tmp_path))).session_id
        state = runtime.sessions[sid].state
        waiting = asyncio.ensure_future(runtime.prompt(sid, "wait"))
        await runtime.until(lambda: bool(state.messages) and state.messages[-1].text == "waiting")
        assert state.state == "running"
        await runtime.cancel(sid)
        assert (await asyncio.wait_for(waiting, 10)).stop_reason == "cancelled"
        with pytest.raises(RequestError) as failed:
            await runtime.prompt(sid, "fail")
        assert failed.value.code == -32099
        assert failed.value.data == {"reason": "model_error"}
        assert (state.stop_reason, state.error) == ("error", failed.value.to_dict())
        assert (await runtime.prompt(sid, "say still here")).stop_reason == "end_turn"


async def test_a_turn_error_keeps_all_of_its_data(tmp_path: Path) -> None:
    """The error a v2 turn ends with reaches the caller whole: `data.reason` stays beside
    `sessionId` (v2's schema types error data holding a `sessionId` as the data of
    "session not found", which has no `reason`)."""
    async with runtime_with(tmp_path, "2", protocol_version=2) as (runtime, _):
        sid = (await runtime.new_session(str(tmp_path))).session_id
        with pytest.raises(RequestError) as failed:
            await runtime.prompt(sid, "busy")
        assert failed.value.code == -32010
        assert failed.value.data == {"reason": "session_busy", "sessionId": sid}
        assert runtime.sessions[sid].state.error == failed.value.to_dict()


async def test_the_agent_dies_during_a_v2_turn(tmp_path: Path) -> None:
    async with runtime_with(tmp_path, "2", protocol_version=2) as (runtime, conn):
        sid = (await runtime.new_session(str(tmp_path))).session_id
        waiting = asyncio.ensure_future(runtime.prompt(sid, "wait"))
        await runtime.until(lambda: runtime.sessions[sid].state.state == "running")
        os.kill(conn.transport.pid, signal.SIGKILL)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(waiting, 10)


# -- v2 agents that do what ours does not ------------------------------------------------


Script = Callable[["ScriptedV2Agent", str], Any]


class ScriptedV2Agent(Agent):
    """A v2-only agent whose prompt runs `script` (which sends raw v2 updates)."""

    protocol_versions = (2,)

    def __init__(self, script: Script, before_answer: Any = None) -> None:
        self.script = script
        self.before_answer = before_answer  # an update sent before the prompt is answered
        self.tasks: set[asyncio.Task[Any]] = set()

    async def v2_initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        return v2.InitializeResponse(
            protocol_version=2,
            info=v2.Implementation(name="scripted", version="1"),
            capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),
        )

    async def v2_session_new(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="s1")

    async def v2_session_prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        if self.before_answer is not None:
            await self.send(params.session_id, self.before_answer)
        task = asyncio.get_running_loop().create_task(self.script(self, params.session_id))
        self.tasks.add(task)
        return v2.PromptResponse(message_id="u1")

    async def send(self, sid: str, update: Any) -> None:
        await self.client.connection.notify(
            "session/update", v2.UpdateSessionNotification(session_id=sid, update=update)
        )


def text(t: str) -> v2.TextContent:
    return v2.TextContent(text=t)


@asynccontextmanager
async def scripted(
    script: Script, before_answer: Any = None, **kwargs: Any
) -> AsyncIterator[Recorder]:
    agent_side, client_side = memory_pair()
    agent = ScriptedV2Agent(script, before_answer)
    runtime = Recorder(**kwargs)
    async with connect_agent(agent, agent_side), connect_client(runtime, client_side).connection:
        await runtime.initialize()  # asks for 1, gets -32022, asks again for 2
        yield runtime


async def test_a_stale_idle_does_not_end_the_turn() -> None:
    # An idle snapshot of earlier work that arrives before the prompt is answered (and
    # before `running`) is not this turn's end.
    async def script(agent: ScriptedV2Agent, sid: str) -> None:
        await agent.send(sid, v2.SessionUpdateRunningStateUpdate())
        await agent.send(sid, v2.AgentMessageChunk(message_id="a1", content=text("late")))
        await agent.send(sid, v2.SessionUpdateIdleStateUpdate(stop_reason="max_tokens"))

    stale = v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn")
    async with scripted(script, before_answer=stale) as runtime:
        assert runtime.agent.protocol_version == 2
        sid = (await runtime.new_session("/tmp")).session_id
        assert (await runtime.prompt(sid, "go", timeout=10)).stop_reason == "max_tokens"
        assert runtime.sessions[sid].state.messages[-1].text == "late"


async def test_v2_only_updates_in_the_model() -> None:
    async def script(agent: ScriptedV2Agent, sid: str) -> None:
        send = agent.send
        await send(sid, v2.SessionUpdateRunningStateUpdate())
        await send(sid, v2.AgentMessage(message_id="a1", content=[text("whole")]))
        await send(sid, v2.AgentMessageChunk(message_id="a1", content=text(" more")))
        await send(sid, v2.AgentMessage(message_id="a1", content=[text("replaced")]))
        await send(sid, v2.SessionUpdateToolCallUpdate(tool_call_id="t1", title="Run", kind="_x"))
        content = v2.Content(content=text("out"))
        await send(sid, v2.ToolCallContentChunk(tool_call_id="t1", content=content))
        await send(
            sid, v2.ToolCallContentChunk(tool_call_id="t1", content=v2.Terminal(terminal_id="term"))
        )
        await send(sid, v2.TerminalUpdate(terminal_id="term", command="ls"))
        await send(sid, v2.TerminalOutputChunk(terminal_id="term", data="aGVs"))
        await send(sid, v2.TerminalOutputChunk(terminal_id="term", data="bG8="))
        exit_status = v2.TerminalExitStatus(exit_code=0)
        await send(sid, v2.TerminalUpdate(terminal_id="term", exit_status=exit_status))
        await send(sid, v2.SessionUpdateToolCallUpdate(tool_call_id="t1", status="cancelled"))
        await agent.client.connection.notify(
            "session/update",
            {"sessionId": sid, "update": {"sessionUpdate": "_progress", "percent": 50}},
        )
        await agent.client.connection.notify(
            "session/update",
            {"sessionId": sid, "update": {"sessionUpdate": "state_update", "state": "_paused"}},
        )
        await send(sid, v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn"))

    async with scripted(script) as runtime:
        sid = (await runtime.new_session("/tmp")).session_id
        await runtime.prompt(sid, "go", timeout=10)
        state = runtime.sessions[sid].state
        assert [m.text for m in state.messages if m.speaker == "agent"] == ["replaced"]
        tool = state.tool_calls["t1"]
        assert (tool.title, tool.kind, tool.status) == ("Run", "_x", "cancelled")
        assert isinstance(tool.content[0], acp.Content) and isinstance(
            tool.content[1], acp.Terminal
        )
        output = runtime.terminal_snapshot(sid, "term")
        assert output is not None and output.output == "hello"
        assert output.exit_status is not None and output.exit_status.exit_code == 0
        assert state.unknown_updates == [{"sessionUpdate": "_progress", "percent": 50}]
        unknown = [u for u in runtime.model if isinstance(u, ev.UnknownEvent)]
        assert [u.session_update for u in unknown] == ["_progress"]
        # A state this client does not know is a state update too (busy: not idle).
        states = [u.state for u in runtime.model if isinstance(u, ev.StateUpdate)]
        assert states == ["running", "_paused", "idle"]
        # Whole messages and chunks reach on_update as they came.
        said = [u for u in runtime.model if ev.kind_of(u).startswith("agent_message")]
        assert [ev.kind_of(u) for u in said] == [
            "agent_message",
            "agent_message_chunk",
            "agent_message",
        ]


async def test_an_unknown_state_keeps_the_turn_open() -> None:
    release = asyncio.Event()

    async def script(agent: ScriptedV2Agent, sid: str) -> None:
        await agent.send(sid, v2.SessionUpdateRunningStateUpdate())
        await agent.client.connection.notify(
            "session/update",
            {"sessionId": sid, "update": {"sessionUpdate": "state_update", "state": "_paused"}},
        )
        await release.wait()
        await agent.send(sid, v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn"))

    async with scripted(script) as runtime:
        sid = (await runtime.new_session("/tmp")).session_id
        prompt = asyncio.ensure_future(runtime.prompt(sid, "go", timeout=10))
        await runtime.until(lambda: runtime.sessions[sid].state.state == "_paused")
        assert not prompt.done()  # a state we do not know is never idle
        release.set()
        assert (await prompt).stop_reason == "end_turn"


async def test_values_the_model_does_not_know() -> None:
    # v2's enums are open: the state and the events keep the agent's own values; where a
    # call's answer has v1's closed types (a stop reason, a permission request), each
    # unknown value has one documented fallback (client/_v2_values.py).
    asked: list[acp.RequestPermissionRequest] = []
    answers: list[Any] = []

    async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
        asked.append(request)
        return request.options[0]

    async def script(agent: ScriptedV2Agent, sid: str) -> None:
        entries = [
            v2.PlanEntry(content="known", priority="high", status="completed"),
            v2.PlanEntry(content="dropped", priority="_urgent", status="cancelled"),
            v2.PlanEntry(content="custom", priority="low", status="_blocked"),
        ]
        await agent.send(sid, v2.PlanUpdate(plan=v2.PlanItems(plan_id="p", entries=entries)))
        options = [
            v2.PermissionOption(option_id="project", name="For the project", kind="_allow_project"),
            v2.PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
        ]
        request = v2.RequestPermissionRequest(session_id=sid, title="Edit?", options=options)
        answers.append(await agent.client.connection.request("session/request_permission", request))
        config = [
            v2.SessionConfigOption(
                config_id="fast", name="Fast", type="boolean", current_value=True
            ),
            v2.SessionConfigOption(
                config_id="speed", name="Speed", type="_slider", current_value="3"
            ),
        ]
        await agent.send(sid, v2.ConfigOptionUpdate(config_options=config))
        for tid, kind, status in [
            ("t1", "_browse", "_queued"),
            ("t2", "edit", "paused"),
            ("t3", "read", "cancelled"),
        ]:
            call = v2.SessionUpdateToolCallUpdate(tool_call_id=tid, kind=kind, status=status)
            await agent.send(sid, call)
        await agent.send(sid, v2.SessionUpdateToolCallUpdate(tool_call_id="t2", kind="_x"))
        subject = v2.ToolCallPermissionSubject(
            tool_call=v2.ToolCallUpdate(tool_call_id="t4", kind="_browse", status="paused")
        )
        request = v2.RequestPermissionRequest(
            session_id=sid, title="Browse?", options=options, subject=subject
        )
        answers.append(await agent.client.connection.request("session/request_permission", request))
        await agent.send(sid, v2.SessionUpdateIdleStateUpdate(stop_reason="_paused_for_review"))

    async with scripted(script, ask=ask) as runtime:
        sid = (await runtime.new_session("/tmp")).session_id
        result = await runtime.prompt(sid, "go", timeout=10)
        state = runtime.sessions[sid].state
        # An unknown stop reason is a generic stop; the state keeps the agent's word.
        assert (result.stop_reason, state.stop_reason) == ("end_turn", "_paused_for_review")
        # The plan keeps its entries' values as sent.
        assert [(e.content, e.priority, e.status) for e in state.plan] == [
            ("known", "high", "completed"),
            ("dropped", "_urgent", "cancelled"),
            ("custom", "low", "_blocked"),
        ]
        # A permission option of an unknown kind is never offered to the policy.
        assert [[o.option_id for o in r.options] for r in asked] == [["once"], ["once"]]
        assert [a.outcome.option_id for a in answers] == ["once", "once"]
        # The tool call updates reach on_update with the agent's own values...
        tools = [u for u in runtime.model if isinstance(u, ev.ToolCallUpdate)]
        assert [(t.tool_call_id, t.kind, t.status) for t in tools] == [
            ("t1", "_browse", "_queued"),
            ("t2", "edit", "paused"),
            ("t3", "read", "cancelled"),
            ("t2", "_x", msgspec.UNSET),
        ]
        # ...and the state keeps them (as the stop reason). A permission request's tool
        # call has v1's types: there an unknown kind is `other` (as v2 asks clients to
        # show it) and `paused` is `in_progress` (v2: "treated as still in progress").
        calls = state.tool_calls
        assert [(t.kind, t.status) for t in calls.values()] == [
            ("_browse", "_queued"),
            ("_x", "paused"),
            ("read", "cancelled"),
        ]
        subject = asked[1].tool_call
        assert (subject.tool_call_id, subject.kind, subject.status) == (
            "t4",
            "other",
            "in_progress",
        )
        # A config option of an unknown type is left out.
        assert [o.id for o in state.config_options] == ["fast"]
        (plan,) = [u for u in runtime.model if isinstance(u, ev.PlanUpdate)]
        assert [e["status"] for e in plan.plan["entries"]] == ["completed", "cancelled", "_blocked"]


async def test_options_sharing_an_id_are_refused_even_when_one_kind_is_unknown() -> None:
    # v2's option kinds are open: an option of a kind the model does not know is left out
    # before the policy sees the rest. The duplicate check looks at the options as they
    # came, so the ambiguous id is refused (-32602, as on v1) and never answered.
    asked: list[acp.RequestPermissionRequest] = []
    refusals: list[RequestError] = []
    answers: list[Any] = []

    async def approve(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
        asked.append(request)
        return request.options[0]

    async def script(agent: ScriptedV2Agent, sid: str) -> None:
        ambiguous = [
            v2.PermissionOption(option_id="go", name="Reject", kind="reject_once"),
            v2.PermissionOption(
                option_id="go", name="Allow for this session", kind="allow_session"
            ),
        ]
        request = v2.RequestPermissionRequest(session_id=sid, title="rm -rf ~", options=ambiguous)
        try:
            answers.append(
                await agent.client.connection.request("session/request_permission", request)
            )
        except RequestError as refused:
            refusals.append(refused)
        # The connection goes on: a request with distinct ids is answered.
        fine = [
            v2.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            v2.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        request = v2.RequestPermissionRequest(session_id=sid, title="Edit?", options=fine)
        answers.append(await agent.client.connection.request("session/request_permission", request))
        await agent.send(sid, v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn"))

    async with scripted(script, ask=approve) as runtime:
        assert runtime.agent.protocol_version == 2
        sid = (await runtime.new_session("/tmp")).session_id
        assert (await runtime.prompt(sid, "go", timeout=10)).stop_reason == "end_turn"
    [refused] = refusals
    assert refused.code == -32602
    assert refused.message == "Duplicate permission optionId: 'go'"
    assert refused.data == {"path": "$.params.options", "optionId": "go"}
    assert [[o.option_id for o in r.options] for r in asked] == [["yes", "no"]]
    assert [a.outcome.option_id for a in answers] == ["yes"]
