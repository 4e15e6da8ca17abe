"""The Turn helpers with clients that offer no `fs` or no `terminal`: the "local" fallback
(files and commands done by the agent itself, inside the session's roots) and "refuse".

Real agent processes (`peers/fallback_agent.py`) driven by our ClientRuntime, which
advertises only what each test lets it; real files, real processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli" / "peers"))
from procs import alive, assert_ended  # noqa: E402
from rendezvous import Rendezvous  # noqa: E402

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "fallback_agent.py")]
pytestmark = pytest.mark.timeout(60)


class Client(ClientRuntime):
    """Offers only what it is told to; allows every permission request and counts them."""

    def __init__(self, *, fs: bool = False, terminal: bool = False, **kwargs: Any) -> None:
        self.asked: list[acp.RequestPermissionRequest] = []
        super().__init__(ask=self._allow, enable_fs=fs, enable_terminal=terminal, **kwargs)

    async def _allow(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.asked.append(request)
        return next(o for o in request.options if o.kind == "allow_once")

    def said(self, sid: str) -> str:
        message = self.sessions[sid].state.last_agent_message
        return message.text if message else ""

    def answer(self, sid: str) -> dict[str, Any]:
        """The JSON object the agent said last (then maybe "after")."""
        value, _ = json.JSONDecoder().raw_decode(self.said(sid))
        assert isinstance(value, dict)
        return value

    def tools(self, sid: str) -> list[Any]:
        return list(self.sessions[sid].state.tool_calls.values())


@asynccontextmanager
async def agent(tmp_path: Path, client: Client, policy: str = "local") -> AsyncIterator[Any]:
    env = {"FALLBACK_AGENT_DB": str(tmp_path / "s.db"), "FALLBACK_POLICY": policy}
    async with spawn_agent(AGENT, client, env=env) as conn:
        await client.initialize()
        yield conn


async def ask(client: Client, sid: str, **request: Any) -> acp.PromptResponse:
    return await client.prompt(sid, json.dumps(request))


def workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """cwd, an additional directory, and a directory outside both."""
    paths = tmp_path / "ws", tmp_path / "extra", tmp_path / "outside"
    for path in paths:
        path.mkdir()
    return paths


# -- files ----------------------------------------------------------------------------


async def test_local_files_inside_the_cwd_and_additional_directories(tmp_path: Path) -> None:
    ws, extra, _ = workspace(tmp_path)
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    client = Client()  # no fs, no terminal
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws), additional_directories=[str(extra)])).session_id
        await ask(client, sid, op="read", path=str(ws / "a.txt"), line=2, limit=1)
        assert client.answer(sid) == {"result": "two\n"}
        await ask(client, sid, op="write", path=str(ws / "sub" / "new.txt"), content="made\n")
        assert client.answer(sid) == {"result": "written"}
        await ask(client, sid, op="write", path=str(extra / "b.txt"), content="extra\n")
        assert client.answer(sid) == {"result": "written"}
        await ask(client, sid, op="read", path=str(extra / "b.txt"))
        assert client.answer(sid) == {"result": "extra\n"}
        assert all(t.status == "completed" for t in client.tools(sid))
    assert (ws / "sub" / "new.txt").read_text() == "made\n"
    assert (extra / "b.txt").read_text() == "extra\n"
    assert len(client.asked) == 2  # one permission request per write


@pytest.mark.parametrize(
    "name", ["file-link", "dir-link", "dotdot", "outside", "relative"], ids=str
)
async def test_local_files_never_escape_the_roots(tmp_path: Path, name: str) -> None:
    ws, _, outside = workspace(tmp_path)
    (outside / "secret.txt").write_text("secret\n")
    (ws / "file-link").symlink_to(outside / "secret.txt")
    (ws / "dir-link").symlink_to(outside)
    paths = {
        "file-link": str(ws / "file-link"),
        "dir-link": str(ws / "dir-link" / "secret.txt"),
        "dotdot": f"{ws}/../outside/secret.txt",
        "outside": str(outside / "secret.txt"),
        "relative": "secret.txt",
    }
    client = Client()
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="read", path=paths[name])
        read = client.answer(sid)
        await ask(client, sid, op="write", path=paths[name], content="overwritten\n")
        write = client.answer(sid)
        assert client.said(sid).endswith("after")  # the turn went on
        assert all(t.status == "failed" for t in client.tools(sid))
    for answer in (read, write):
        assert answer["type"] == "RequestError", answer
        expected = "absolute" if name == "relative" else "outside the session's workspace"
        if name == "outside":
            expected = "Permission denied"
        assert expected in answer["error"], answer
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_a_client_that_offers_fs_still_does_the_file_work(tmp_path: Path) -> None:
    ws, _, _ = workspace(tmp_path)
    seen: list[tuple[str, str]] = []

    def buffer(path: Path) -> str | None:
        seen.append(("read", path.name))
        return None

    client = Client(
        fs=True, buffer_provider=buffer, on_write=lambda path, _: seen.append(("write", path.name))
    )
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="write", path=str(ws / "x.txt"), content="via client\n")
        await ask(client, sid, op="read", path=str(ws / "x.txt"))
        assert client.answer(sid) == {"result": "via client\n"}
    assert seen == [("write", "x.txt"), ("read", "x.txt")]  # served by the client


# -- commands ---------------------------------------------------------------------------


async def test_a_local_command_runs_in_the_session_cwd_and_shows_its_output(
    tmp_path: Path,
) -> None:
    ws, _, _ = workspace(tmp_path)
    client = Client(fs=True)  # files through the client, commands locally
    script = 'pwd; echo "$GREETING" > made.txt; echo done >&2; exit 3'
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="run", argv=["sh", "-c", script], env={"GREETING": "hi"})
        result = client.answer(sid)["result"]
        tool = client.tools(sid)[0]
    assert (ws / "made.txt").read_text() == "hi\n"
    assert result["output"] == f"{ws}\ndone\n"
    assert (result["exit_code"], result["signal"], result["timed_out"]) == (3, None, False)
    assert result["terminal_id"] == ""  # no client terminal
    assert len(client.asked) == 1
    assert client.terminals.terminal_ids(sid) == []
    [content] = tool.content  # the output as text: there is no terminal to embed
    assert isinstance(content, acp.Content) and isinstance(content.content, acp.TextContent)
    assert content.content.text == f"```\n{ws}\ndone\n```\nexit code 3"


async def test_with_a_client_terminal_the_command_runs_there(tmp_path: Path) -> None:
    ws, _, _ = workspace(tmp_path)
    client = Client(fs=True, terminal=True)
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="run", argv=["sh", "-c", "echo $$"])
        result = client.answer(sid)["result"]
        tool = client.tools(sid)[0]
    assert result["terminal_id"].startswith("term-")
    assert result["terminal_id"] in client.released_terminals  # the client ran it
    assert [type(c) for c in tool.content] == [acp.Terminal]


async def test_a_local_command_outside_the_roots_is_refused(tmp_path: Path) -> None:
    ws, _, outside = workspace(tmp_path)
    client = Client()
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="run", argv=["touch", "ran"], cwd=str(outside))
        answer = client.answer(sid)
    assert answer["type"] == "RequestError" and "Permission denied" in answer["error"]
    assert not (outside / "ran").exists()


async def test_a_local_command_timeout_kills_it(tmp_path: Path) -> None:
    ws, _, _ = workspace(tmp_path)
    rv = Rendezvous(tmp_path)
    client = Client()
    script = 'echo "shell $$" > "$RENDEZVOUS_READY"; echo started; exec sleep 300'
    try:
        async with agent(tmp_path, client):
            sid = (await client.new_session(str(ws))).session_id
            turn = asyncio.create_task(
                ask(client, sid, op="run", argv=["sh", "-c", script], env=rv.env, timeout=1)
            )
            pid = await asyncio.to_thread(rv.expect, "shell")
            await asyncio.wait_for(turn, 20)
            result = client.answer(sid)["result"]
    finally:
        rv.close()
    assert result["timed_out"] is True and result["exit_code"] is None
    assert result["output"] == "started\n"
    assert_ended({pid})


async def test_a_local_command_output_is_capped(tmp_path: Path) -> None:
    ws, _, _ = workspace(tmp_path)
    client = Client()
    script = "import sys; sys.stdout.write('a' * 100000 + 'é' * 10 + 'END')"
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="run", argv=[sys.executable, "-c", script], limit=1000)
        result = client.answer(sid)["result"]
        [content] = client.tools(sid)[0].content
    assert result["truncated"] is True and result["exit_code"] == 0
    assert result["output"].endswith("é" * 10 + "END")
    assert len(result["output"].encode()) <= 1000
    assert content.content.text.endswith(
        "exit code 0; the beginning of the output was dropped (output limit)"
    )


# -- ending commands with the turn and the session --------------------------------------


async def start_group(
    client: Client, rv: Rendezvous, sid: str
) -> tuple[asyncio.Task[acp.PromptResponse], set[int]]:
    """Run a local command whose shell and background child share its process group."""
    script = (
        'sleep 300 & echo "child $!" > "$RENDEZVOUS_READY"; '
        'echo "shell $$" > "$RENDEZVOUS_READY"; wait'
    )
    turn = asyncio.create_task(ask(client, sid, op="run", argv=["sh", "-c", script], env=rv.env))
    child = await asyncio.to_thread(rv.expect, "child")
    shell = await asyncio.to_thread(rv.expect, "shell")
    assert alive(child) and alive(shell)
    return turn, {child, shell}


@pytest.mark.parametrize("how", ["cancel", "close", "delete", "disconnect"])
async def test_ending_the_turn_or_session_ends_the_local_command(tmp_path: Path, how: str) -> None:
    ws, _, _ = workspace(tmp_path)
    rv = Rendezvous(tmp_path)
    client = Client()
    try:
        async with agent(tmp_path, client):
            sid = (await client.new_session(str(ws))).session_id
            turn, pids = await start_group(client, rv, sid)
            if how == "cancel":
                await client.cancel(sid)
            elif how == "close":
                await client.close_session(sid)
            elif how == "delete":
                await client.agent.session_delete(acp.DeleteSessionRequest(session_id=sid))
            if how != "disconnect":
                assert (await asyncio.wait_for(turn, 20)).stop_reason == "cancelled"
                assert_ended(pids)  # by the agent, while it still runs
        # disconnect: leaving the block closes the agent's stdin and waits for it to exit
    finally:
        rv.close()
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)
    assert_ended(pids)


async def test_a_command_that_ignores_sigterm_is_ended_before_the_agent_exits(
    tmp_path: Path,
) -> None:
    # Cancelled, the turn starts ending the command (SIGTERM to its group, SIGKILL after a
    # grace time); the client leaves meanwhile, which cancels the turn a second time. The
    # session's LocalAccess still ends the group, here a child that ignores SIGTERM, before
    # the agent exits.
    ws, _, _ = workspace(tmp_path)
    rv = Rendezvous(tmp_path)
    client = Client()
    script = (
        'trap \'echo "term $$" > "$RENDEZVOUS_READY"\' TERM; '
        '(trap "" TERM; exec sleep 300) & echo "child $!" > "$RENDEZVOUS_READY"; '
        "while :; do sleep 1; done"
    )
    env = {"FALLBACK_AGENT_DB": str(tmp_path / "s.db")}
    pids: set[int] = set()
    try:
        async with spawn_agent(AGENT, client, env=env, shutdown_timeout=15):
            await client.initialize()
            sid = (await client.new_session(str(ws))).session_id
            turn = asyncio.create_task(
                ask(client, sid, op="run", argv=["sh", "-c", script], env=rv.env)
            )
            pids.add(await asyncio.to_thread(rv.expect, "child"))
            await client.cancel(sid)
            pids.add(await asyncio.to_thread(rv.expect, "term"))
        await asyncio.gather(turn, return_exceptions=True)
        assert_ended(pids)
    finally:
        rv.close()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# -- the "refuse" policy and what escapes a turn ---------------------------------------


async def test_refuse_fails_each_tool_call_clearly_and_the_turn_goes_on(tmp_path: Path) -> None:
    ws, _, _ = workspace(tmp_path)
    (ws / "a.txt").write_text("content\n")
    client = Client()
    async with agent(tmp_path, client, policy="refuse"):
        sid = (await client.new_session(str(ws))).session_id
        answers = []
        for request in (
            {"op": "read", "path": str(ws / "a.txt")},
            {"op": "write", "path": str(ws / "a.txt"), "content": "changed\n"},
            {"op": "run", "argv": ["touch", str(ws / "ran")]},
        ):
            result = await ask(client, sid, **request)
            assert result.stop_reason == "end_turn"
            assert client.said(sid).endswith("after")
            answers.append(client.answer(sid))
        tools = client.tools(sid)
    assert [a["type"] for a in answers] == ["ClientCapabilityMissing"] * 3
    assert answers[0]["error"] == (
        f"Cannot read {ws / 'a.txt'}: the client does not offer `fs.readTextFile`, "
        "and this agent reads files only through the client"
    )
    assert "`fs.writeTextFile`" in answers[1]["error"]
    assert answers[2]["error"].startswith(f"Cannot run `touch {ws / 'ran'}`: ")
    assert (
        "`terminal`, and this agent runs commands only through the client" in (answers[2]["error"])
    )
    assert [t.status for t in tools] == ["failed"] * 3
    for tool, answer in zip(tools, answers, strict=True):
        assert tool.content[-1].content.text == answer["error"]  # the tool call says why
    assert (ws / "a.txt").read_text() == "content\n" and not (ws / "ran").exists()
    assert len(client.asked) == 2  # permission is still asked before a write or a command


async def test_refuse_with_a_client_that_offers_everything_uses_the_client(
    tmp_path: Path,
) -> None:
    ws, _, _ = workspace(tmp_path)
    client = Client(fs=True, terminal=True)
    async with agent(tmp_path, client, policy="refuse"):
        sid = (await client.new_session(str(ws))).session_id
        await ask(client, sid, op="write", path=str(ws / "a.txt"), content="ok\n")
        await ask(client, sid, op="run", argv=["touch", str(ws / "ran")])
        assert client.answer(sid)["result"]["exit_code"] == 0
    assert (ws / "a.txt").read_text() == "ok\n" and (ws / "ran").exists()


@pytest.mark.parametrize("op", ["read", "run", "elicit"])
async def test_a_missing_capability_that_ends_a_turn_is_never_an_internal_error(
    tmp_path: Path, op: str
) -> None:
    ws, _, _ = workspace(tmp_path)
    client = Client()
    request = {"op": op, "catch": False, "path": str(ws / "a.txt"), "argv": ["true"]}
    async with agent(tmp_path, client, policy="refuse"):
        sid = (await client.new_session(str(ws))).session_id
        result = await ask(client, sid, **request)
        said = client.said(sid)
        tools = client.tools(sid)
        assert (await ask(client, sid, op="write", path=str(ws / "b"), content="")).stop_reason
    assert result.stop_reason == "end_turn"
    assert said.startswith("\n\nI could not finish this: ")
    assert ("elicitation" if op == "elicit" else "the client does not offer") in said
    assert all(t.status == "failed" for t in tools)  # none left pending


async def test_a_turn_that_raises_fails_its_unfinished_tool_calls(tmp_path: Path) -> None:
    ws, _, _ = workspace(tmp_path)
    client = Client()
    async with agent(tmp_path, client):
        sid = (await client.new_session(str(ws))).session_id
        with pytest.raises(RequestError) as caught:
            await ask(client, sid, op="fail")
        [tool] = client.tools(sid)
    assert caught.value.code == -32603
    assert tool.status == "failed" and tool.content[0].content.text == (
        "The agent stopped on an error."
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_a_signal_to_the_agent_ends_its_local_commands(tmp_path: Path, sig: int) -> None:
    # A client (or a supervisor) ends the agent with a signal: the agent closes the
    # connection as at the end of input, so the commands it runs itself end with it.
    ws, _, _ = workspace(tmp_path)
    rv = Rendezvous(tmp_path)
    client = Client()
    try:
        async with agent(tmp_path, client) as conn:
            sid = (await client.new_session(str(ws))).session_id
            turn, pids = await start_group(client, rv, sid)
            os.kill(conn.transport.pid, sig)
            code = await asyncio.wait_for(conn.transport.wait_exit(), 20)
            assert code == 128 + sig
            await asyncio.to_thread(assert_ended, pids)
    finally:
        rv.close()
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)


def test_run_command_takes_its_arguments_as_a_list() -> None:
    # A str for `args` would be sent one letter per argument; the signature and the call
    # both refuse it.
    import typing

    from acpstack.agent import Turn

    hints = typing.get_type_hints(Turn.run_command)
    assert hints["args"] == list[str] | tuple[str, ...]
