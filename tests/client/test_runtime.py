"""ClientRuntime driven by a real agent process: real files, terminals, permissions, crash."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from acpstack import Agent, ConnectionClosed, RequestError, spawn_agent
from acpstack.client import AskUser, ClientRuntime, Rule, Rules
from acpstack.schema import v1 as acp
from acpstack.testing import connected_pair

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "scenario_agent.py")]


def last_text(runtime: ClientRuntime, session_id: str) -> str:
    message = runtime.sessions[session_id].state.last_agent_message
    assert message is not None
    return message.text


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hello')\n")
    return root


async def test_read_write_build_inside_the_workspace(workspace: Path) -> None:
    runtime = ClientRuntime()
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        await runtime.prompt(sid, f"read {workspace / 'main.py'}")
        assert last_text(runtime, sid) == "print('hello')\n"
        await runtime.prompt(sid, f"write {workspace / 'src' / 'new.py'} x = 1")
        assert (workspace / "src" / "new.py").read_text() == "x = 1"
        result = await runtime.prompt(sid, "build")
        assert result.stop_reason == "end_turn"
        text = last_text(runtime, sid)
        assert text.startswith("exit=3 truncated=True bytes=")
        size = int(text.split("bytes=")[1].split()[0])
        assert 990 <= size <= 1000
        assert "line 3999" in text
        tool = runtime.sessions[sid].state.tool_calls["build"]
        assert tool.kind == "execute" and isinstance(tool.content[0], acp.Terminal)


async def test_paths_outside_the_workspace_are_refused(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (workspace / "link").symlink_to(secret)
    runtime = ClientRuntime()
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        for path in (secret, workspace / ".." / "secret.txt", workspace / "link"):
            await runtime.prompt(sid, f"read {path}")
            text = last_text(runtime, sid)
            assert (
                text.startswith("error -32005")
                and "permission_denied" in text
                and "top secret" not in text
            )
        await runtime.prompt(sid, "read relative.txt")
        assert last_text(runtime, sid).startswith("error -32602")
        await runtime.prompt(sid, f"read {workspace / 'missing.txt'}")
        text = last_text(runtime, sid)
        assert text.startswith("error -32002") and "not found" in text and "missing.txt" in text


async def test_widened_boundary(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("A")
    runtime = ClientRuntime(extra_roots=[str(other)])
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        await runtime.prompt(sid, f"read {other / 'a.txt'}")
        assert last_text(runtime, sid) == "A"


async def test_permission_asks_the_user(workspace: Path) -> None:
    asked: list[acp.RequestPermissionRequest] = []

    async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        asked.append(request)
        return next(o for o in request.options if o.kind == "allow_once")

    runtime = ClientRuntime(ask=ask)
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        await runtime.prompt(sid, "permission")
        assert last_text(runtime, sid) == "permission: allow"
        assert asked[0].tool_call.title == "Edit main.py"


async def test_no_policy_means_rejection(workspace: Path) -> None:
    runtime = ClientRuntime()
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        await runtime.prompt(sid, "permission")
        assert last_text(runtime, sid) == "permission: reject"


async def test_options_sharing_an_id_are_refused_not_answered(workspace: Path) -> None:
    asked: list[acp.RequestPermissionRequest] = []

    async def approve(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        asked.append(request)
        return request.options[0]

    runtime = ClientRuntime(ask=approve)
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        result = await runtime.prompt(sid, "permission-ambiguous")
        assert result.stop_reason == "end_turn"
        text = last_text(runtime, sid)
        assert text.startswith("error -32602: Duplicate permission optionId: 'go'"), text
        assert asked == []  # the user is never asked a question whose answer is ambiguous
        await runtime.prompt(sid, "permission")  # the connection goes on
        assert last_text(runtime, sid) == "permission: allow"


class AmbiguousAsker(Agent):
    """Asks for permission with options sharing an id; keeps what the client answered."""

    def __init__(self) -> None:
        self.outcomes: list[object] = []

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        options = [
            acp.PermissionOption(option_id="a", name="Allow", kind="allow_once"),
            acp.PermissionOption(option_id="b", name="Always", kind="allow_always"),
            acp.PermissionOption(option_id="a", name="Reject", kind="reject_once"),
        ]
        tool = acp.ToolCallUpdate(tool_call_id="t", title="Delete everything", kind="delete")
        try:
            answer = await self.client.session_request_permission(
                acp.RequestPermissionRequest(
                    session_id=params.session_id, tool_call=tool, options=options
                )
            )
            self.outcomes.append(answer.outcome)
        except RequestError as err:
            self.outcomes.append(err)
        return acp.PromptResponse(stop_reason="end_turn")


async def test_options_sharing_an_id_are_refused_in_process(workspace: Path) -> None:
    agent = AmbiguousAsker()
    runtime = ClientRuntime()  # DenyAll: without the check it would answer the reject option "a"
    async with connected_pair(agent, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        await runtime.prompt(sid, "go")
    [err] = agent.outcomes
    assert isinstance(err, RequestError) and err.code == -32602
    assert "'a'" in err.message and err.data == {"path": "$.params.options", "optionId": "a"}


async def test_rules_and_remembered_choices(workspace: Path) -> None:
    calls = 0

    async def ask(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        nonlocal calls
        calls += 1
        return next(o for o in request.options if o.kind == "allow_always")

    policy = Rules(rules=[Rule("reject", kinds=["delete"])], fallback=AskUser(ask))
    runtime = ClientRuntime(permission_policy=policy)
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        await runtime.prompt(sid, "permission")
        await runtime.prompt(sid, "permission")
        assert last_text(runtime, sid) == "permission: allow"
        assert calls == 1  # the second answer came from the remembered allow_always


async def test_cancel_answers_pending_permission(workspace: Path) -> None:
    asked = asyncio.Event()

    async def never(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    runtime = ClientRuntime(ask=never)
    async with spawn_agent(AGENT, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        turn = asyncio.create_task(runtime.prompt(sid, "permission"))
        await asyncio.wait_for(asked.wait(), 10)
        await runtime.cancel(sid)
        result = await asyncio.wait_for(turn, 10)
        assert result.stop_reason == "cancelled"
        assert last_text(runtime, sid) == "permission: cancelled"


async def test_agent_crash_mid_prompt(workspace: Path) -> None:
    lines: list[str] = []
    runtime = ClientRuntime()
    async with spawn_agent(AGENT, runtime, stderr_callback=lines.append):
        await runtime.initialize()
        sid = (await runtime.new_session(str(workspace))).session_id
        with pytest.raises(ConnectionClosed) as info:
            await asyncio.wait_for(runtime.prompt(sid, "crash"), 10)
        assert "exited with code 5" in str(info.value) and "about to crash: boom" in str(info.value)
        with pytest.raises(ConnectionClosed):
            await runtime.prompt(sid, "read x")
    assert "about to crash: boom" in lines


class ModesAgent(Agent):
    """Answers session/new, load and resume with modes and a config option (no updates)."""

    def state(self, mode: str) -> dict[str, object]:
        return {
            "modes": acp.SessionModeState(
                current_mode_id=mode,
                available_modes=[
                    acp.SessionMode(id="ask", name="Ask"),
                    acp.SessionMode(id="code", name="Code"),
                ],
            ),
            "config_options": [
                acp.SessionConfigOption(id="fast", name="Fast", type="boolean", current_value=True)
            ],
        }

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        caps = acp.AgentCapabilities(
            load_session=True,
            session_capabilities=acp.SessionCapabilities(resume=acp.SessionResumeCapabilities()),
        )
        return acp.InitializeResponse(protocol_version=1, agent_capabilities=caps)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1", **self.state("ask"))  # type: ignore[arg-type]

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        return acp.LoadSessionResponse(**self.state("code"))  # type: ignore[arg-type]

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        return acp.ResumeSessionResponse(**self.state("code"))  # type: ignore[arg-type]


async def test_the_session_state_starts_from_what_new_load_and_resume_answer(
    workspace: Path,
) -> None:
    runtime = ClientRuntime()
    async with connected_pair(ModesAgent(), runtime):
        await runtime.initialize()
        await runtime.new_session(str(workspace))
        state = runtime.sessions["s1"].state
        assert state.current_mode_id == "ask"
        assert [mode.id for mode in state.available_modes] == ["ask", "code"]
        assert [option.id for option in state.config_options] == ["fast"]
        await runtime.load_session("s2", str(workspace))
        assert runtime.sessions["s2"].state.current_mode_id == "code"
        await runtime.resume_session("s3", str(workspace))
        assert runtime.sessions["s3"].state.available_modes[1].id == "code"
