"""A client that answers `session/request_permission` with an error refuses: the turn of
`acpstack agent` ends normally without doing the work, and the session goes on.

Found by the fuzzer (`python -m tools.fuzz --target agent`): the agent relayed the client's
error as the answer to `session/prompt` (so a client whose permission dialog failed got its
own -32603 back for the prompt). Real agent process, real pipes, our ClientRuntime.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp
from acpstack.wire import INTERNAL_ERROR

pytestmark = pytest.mark.timeout(60, func_only=True)


def scripted_agent(ws: Path) -> list[str]:
    return [sys.executable, "-m", "acpstack", "agent", "--store", str(ws.parent / "s.db")]


def agent_text(client: ClientRuntime, sid: str) -> str:
    message = client.sessions[sid].state.last_agent_message
    assert message is not None
    return message.text


@pytest.mark.parametrize("code", [INTERNAL_ERROR, -32000])
async def test_a_failed_permission_request_is_a_refusal(tmp_path: Path, code: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Demo\n")
    asked: list[str | None] = []

    async def broken_dialog(request: acp.RequestPermissionRequest) -> acp.PermissionOption:
        asked.append(request.tool_call.kind)
        raise RequestError(code, "the permission dialog crashed")

    client = ClientRuntime(ask=broken_dialog)
    async with spawn_agent(scripted_agent(ws), client):
        await client.initialize()
        sid = (await client.new_session(str(ws))).session_id
        ran = await client.prompt(sid, "/run touch ran.txt")
        assert ran.stop_reason == "end_turn"
        assert "I did not run it" in agent_text(client, sid)
        edited = await client.prompt(sid, "/edit README.md Demo Changed")
        assert edited.stop_reason == "end_turn"
        assert "I left `README.md` unchanged" in agent_text(client, sid)
        # The session goes on: a prompt that needs no permission reads the file.
        read = await client.prompt(sid, "/read README.md")
        assert read.stop_reason == "end_turn"
        assert "# Demo" in agent_text(client, sid)
        tools = list(client.sessions[sid].state.tool_calls.values())
    assert asked == ["execute", "edit"]
    assert [t.status for t in tools] == ["failed", "failed", "completed"]
    assert not (ws / "ran.txt").exists()
    assert (ws / "README.md").read_text() == "# Demo\n"
