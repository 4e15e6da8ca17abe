"""`acpstack agent` through whole turns (list, read, edit, run a command) from clients that
offer everything, only `fs`, or nothing: our ClientRuntime, the official Python and
TypeScript SDK clients (tests/interop/peers), with the scripted brain and with the LLM
brain on a fake model. The file change and the command's effect are checked on disk.
Real processes all the way."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import _foreign  # noqa: E402
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

pytestmark = pytest.mark.timeout(180, func_only=True)
NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
CAPS = {"all": (True, True), "fs": (True, False), "none": (False, False)}
# The tests of the workspace leave a mark on disk when they run.
TEST_FILE = """import pathlib, unittest


class T(unittest.TestCase):
    def test_mark(self):
        pathlib.Path("ran.txt").write_text("the tests ran")
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Demo\n")
    (workspace / "test_mark.py").write_text(TEST_FILE)
    return workspace


def scripted_agent(ws: Path) -> list[str]:
    return [sys.executable, "-m", "acpstack", "agent", "--store", str(ws.parent / "s.db")]


class Client(ClientRuntime):
    """Offers what `caps` names, allows everything, keeps every update and permission ask."""

    def __init__(self, caps: str) -> None:
        self.asked: list[acp.RequestPermissionRequest] = []
        self.updates: list[Any] = []
        fs, terminal = CAPS[caps]
        super().__init__(
            ask=self._allow,
            on_update=lambda sid, update: self.updates.append(update),
            enable_fs=fs,
            enable_terminal=terminal,
        )

    async def _allow(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.asked.append(request)
        return next(o for o in request.options if o.kind == "allow_once")

    def tool_contents(self) -> list[type]:
        """The kinds of content the tool call updates carried, in order."""
        return [
            type(content.content) if isinstance(content, acp.Content) else type(content)
            for update in self.updates
            if isinstance(update, events.ToolCallUpdate) and isinstance(update.content, list)
            for content in update.content
        ]


def assert_done_on_disk(ws: Path, line: str) -> None:
    assert (ws / "README.md").read_text() == f"# Demo\n{line}"
    assert (ws / "ran.txt").read_text() == "the tests ran"


# -- the scripted brain, our client ------------------------------------------------------


@pytest.mark.parametrize("caps", list(CAPS))
async def test_scripted_turn_lists_reads_edits_and_runs(ws: Path, caps: str) -> None:
    client = Client(caps)
    async with spawn_agent(scripted_agent(ws), client):
        await client.initialize()
        sid = (await client.new_session(str(ws))).session_id
        result = await client.prompt(sid, "add a changelog")
        state = client.sessions[sid].state
    assert result.stop_reason == "end_turn"
    assert_done_on_disk(ws, "\n- add a changelog\n")
    # Permission for the edit and for the command, whoever does the work.
    assert [r.tool_call.kind for r in client.asked] == ["edit", "execute"]
    assert [t.status for t in state.tool_calls.values()] == ["completed"] * 4
    assert [e.status for e in state.plan] == ["completed"] * 4
    shown = client.tool_contents()
    if caps == "all":  # the client's terminals are embedded
        assert shown.count(acp.Terminal) == 2
    else:  # the agent ran the commands: their output is shown as text
        assert acp.Terminal not in shown
        outputs = [
            u.content[0].content.text
            for u in client.updates
            if isinstance(u, events.ToolCallUpdate)
            and u.status == "in_progress"
            and isinstance(u.content, list)
        ]
        assert outputs[0] == "```\nREADME.md\ntest_mark.py\n```\nexit code 0"
        assert "test_mark (test_mark.T" in outputs[1] and outputs[1].endswith("exit code 0")
    assert "exit code 0" in state.last_agent_message.text  # type: ignore[union-attr]


async def test_the_seed_documents_prompts_are_answered_without_fs_or_terminal(ws: Path) -> None:
    # The session/prompt examples of the seed documents, from a client that offers nothing
    # and approves nothing: each ends its turn normally (it was -32603 before).
    prompts: list[list[acp.ContentBlock]] = [
        [
            acp.TextContent(text="Can you analyze this code for potential issues?"),
            acp.EmbeddedResource(
                resource=acp.TextResourceContents(
                    uri="file:///home/user/project/main.py",
                    mime_type="text/x-python",
                    text="def process_data(items):\n    for item in items:\n        print(item)",
                )
            ),
        ],
        [acp.TextContent(text="Hello, world!")],
        [acp.TextContent(text="Refactor this file to use async/await")],
        [acp.TextContent(text="Hi")],
        [acp.TextContent(text="/web agent client protocol")],
    ]
    client = ClientRuntime(enable_fs=False, enable_terminal=False)  # denies every permission
    async with spawn_agent(scripted_agent(ws), client):
        await client.initialize()
        sid = (await client.new_session(str(ws))).session_id
        for prompt in prompts:
            assert (await client.prompt(sid, prompt)).stop_reason == "end_turn"
        tools = client.sessions[sid].state.tool_calls.values()
    assert all(t.status in ("completed", "failed") for t in tools)
    assert (ws / "README.md").read_text() == "# Demo\n" and not (ws / "ran.txt").exists()


# -- the LLM brain, our client -----------------------------------------------------------


def model_turn(ws: Path) -> list[list[tuple[Any, ...]]]:
    """The model lists the workspace, reads the README, edits it and runs the tests."""
    calls = [
        ("list_files", {}),
        ("read_file", {"path": "README.md"}),
        ("edit_file", {"path": "README.md", "old_text": "# Demo\n", "new_text": "# Demo!\n"}),
        ("run_command", {"command": sys.executable, "args": ["-m", "unittest"]}),
    ]
    scripts: list[list[tuple[Any, ...]]] = [
        [("tool", 0, f"c{i}", name, [json.dumps(args)]), ("finish", "tool_calls")]
        for i, (name, args) in enumerate(calls)
    ]
    scripts.append([("text", "Done."), ("finish", "stop")])
    return scripts


@pytest.mark.parametrize("caps", list(CAPS))
async def test_model_turn_lists_reads_edits_and_runs(ws: Path, caps: str) -> None:
    with FakeOpenAI() as fake:
        fake.scripts.extend(model_turn(ws))
        client = Client(caps)
        command = agent_command(fake.url, str(ws.parent / "s.db"))
        async with spawn_agent(command, client, env={"FAKE_KEY": "k"}):
            await client.initialize()
            sid = (await client.new_session(str(ws))).session_id
            result = await client.prompt(sid, "improve the title and test")
            tools = list(client.sessions[sid].state.tool_calls.values())
        results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert result.stop_reason == "end_turn"
    assert (ws / "README.md").read_text() == "# Demo!\n"
    assert (ws / "ran.txt").read_text() == "the tests ran"
    assert [r.tool_call.kind for r in client.asked] == ["edit", "execute"]
    assert [t.status for t in tools] == ["completed"] * 4
    assert "README.md" in results[0] and "test_mark.py" in results[0]  # the listing
    assert results[1] == "# Demo\n"
    assert results[2] == f"{ws / 'README.md'} written."
    assert results[3].startswith("exit code 0\n") and "OK" in results[3]
    shown = client.tool_contents()
    assert (acp.Terminal in shown) == (caps == "all")


# -- the official SDK clients ------------------------------------------------------------


SDK_CLIENTS = [
    pytest.param("py", id="python-sdk"),
    pytest.param("ts", id="typescript-sdk", marks=NEEDS_NODE),
]


def their_client(kind: str, agent: list[str], *options: str) -> dict[str, Any]:
    if kind == "py":
        _foreign.python_sdk_python()
        cmd = _foreign.py_sdk_client_cmd(agent, *options)
    else:
        _foreign.node_sdk_dir()
        cmd = _foreign.ts_client_cmd(agent, *options)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def final_statuses(updates: list[dict[str, Any]]) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for update in updates:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and "status" in update:
            statuses[update["toolCallId"]] = update["status"]
    return statuses


@pytest.mark.parametrize("caps", list(CAPS))
@pytest.mark.parametrize("kind", SDK_CLIENTS)
def test_sdk_clients_drive_a_whole_turn(ws: Path, kind: str, caps: str) -> None:
    report = their_client(
        kind,
        scripted_agent(ws),
        *("--caps", caps, "--cwd", str(ws), "--permission", "allow"),
        *("--prompt", "add a changelog"),
    )
    [turn] = report["turns"]
    assert turn["error"] is None and turn["stopReason"] == "end_turn"
    assert_done_on_disk(ws, "\n- add a changelog\n")
    assert [p["toolCall"]["kind"] for p in report["permissionRequests"]] == ["edit", "execute"]
    assert list(final_statuses(turn["updates"]).values()) == ["completed"] * 4
    # The agent used what the client offered, and only that.
    fs, terminal = CAPS[caps]
    assert bool(report["fsReads"]) == fs and len(report["fsWrites"]) == int(fs)
    assert len(report["terminals"]) == (2 if terminal else 0)
    embedded = [
        c["type"]
        for u in turn["updates"]
        if u["sessionUpdate"] == "tool_call_update"
        for c in u.get("content") or []
    ]
    assert ("terminal" in embedded) == terminal


# -- failures: paths outside the roots, commands that cannot start, the "refuse" policy ------


async def test_model_tools_that_fail_locally_fail_their_tool_calls(
    ws: Path, tmp_path: Path
) -> None:
    calls = [
        ("write_file", {"path": "../outside.txt", "content": "escaped\n"}),
        ("run_command", {"command": "no-such-command-for-this-test"}),
        ("run_command", {"command": "true", "args": []}),
    ]
    with FakeOpenAI() as fake:
        fake.scripts.extend(
            [("tool", 0, f"c{i}", name, [json.dumps(args)]), ("finish", "tool_calls")]
            for i, (name, args) in enumerate(calls)
        )
        fake.scripts.append([("text", "Done."), ("finish", "stop")])
        client = Client("none")
        command = agent_command(fake.url, str(tmp_path / "s.db"))
        async with spawn_agent(command, client, env={"FAKE_KEY": "k"}):
            await client.initialize()
            sid = (await client.new_session(str(ws))).session_id
            assert (await client.prompt(sid, "try")).stop_reason == "end_turn"
            tools = list(client.sessions[sid].state.tool_calls.values())
        results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert [t.status for t in tools] == ["failed", "failed", "completed"]
    assert not (tmp_path / "outside.txt").exists()
    assert results[0].startswith("error: Permission denied")
    assert results[1] == "error: Command not found: no-such-command-for-this-test"
    assert tools[1].content[0].content.text == results[1].removeprefix("error: ")


async def test_the_reference_agent_with_the_refuse_policy(ws: Path, tmp_path: Path) -> None:
    # A library author may serve the reference agent's brains with fallback="refuse": every
    # file or command step fails its tool call with the reason, and the turn goes on.
    from acpstack.agent import MemorySessionStore
    from acpstack.cli._refagent import ReferenceAgent
    from acpstack.cli._scripted import ScriptedBrain
    from acpstack.testing import connected_pair

    agent = ReferenceAgent(ScriptedBrain(), store=MemorySessionStore(), fallback="refuse")
    client = Client("none")
    async with connected_pair(agent, client):
        await client.initialize()
        sid = (await client.new_session(str(ws))).session_id
        result = await client.prompt(sid, "add a changelog")
        said = client.sessions[sid].state.last_agent_message.text  # type: ignore[union-attr]
        for command in ("/read README.md", "/run ls", "/edit README.md Demo Hello"):
            assert (await client.prompt(sid, command)).stop_reason == "end_turn"
        tools = list(client.sessions[sid].state.tool_calls.values())
    assert result.stop_reason == "end_turn"
    assert "I cannot edit `NOTES.md`: Cannot read" in said  # no README found: no listing
    assert (
        "could not start: Cannot run `sh -c 'ls -1'`: the client does not offer `terminal`" in said
    )
    # Permission is asked before a command as usual (the brain cannot know it will be refused).
    assert [r.tool_call.title for r in client.asked] == ["Run `ls -la`", "Run `ls`"]
    assert all(t.status == "failed" for t in tools)
    assert all("the client does not offer" in t.content[-1].content.text for t in tools)
    assert (ws / "README.md").read_text() == "# Demo\n" and not (ws / "ran.txt").exists()


async def test_refuse_with_a_client_that_reads_but_does_not_write(ws: Path) -> None:
    from acpstack.agent import MemorySessionStore
    from acpstack.cli._refagent import ReferenceAgent
    from acpstack.cli._scripted import ScriptedBrain
    from acpstack.testing import connected_pair

    class ReadOnly(Client):
        def capabilities(self) -> acp.ClientCapabilities:
            return acp.ClientCapabilities(
                fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=False)
            )

    agent = ReferenceAgent(ScriptedBrain(), store=MemorySessionStore(), fallback="refuse")
    client = ReadOnly("fs")
    async with connected_pair(agent, client):
        await client.initialize()
        sid = (await client.new_session(str(ws))).session_id
        assert (await client.prompt(sid, "/edit README.md Demo Hello")).stop_reason == "end_turn"
        said = client.sessions[sid].state.last_agent_message.text  # type: ignore[union-attr]
        [tool] = client.sessions[sid].state.tool_calls.values()
    assert [r.tool_call.kind for r in client.asked] == ["edit"]
    assert f"I could not write `README.md`: Cannot write {ws / 'README.md'}: " in said
    assert tool.status == "failed" and "`fs.writeTextFile`" in tool.content[-1].content.text
    assert (ws / "README.md").read_text() == "# Demo\n"
