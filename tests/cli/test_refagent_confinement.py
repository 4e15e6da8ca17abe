"""`acpstack agent`'s read-only model tools (`search_files`, `list_files`) stay inside the
session's roots (its cwd and additional directories), like `read_file`: a path outside them,
through `..`, an absolute path or a symlink, is refused with a clear tool result (no command
runs, the turn goes on), and a pattern that looks like an option is searched for literally.
Both when the agent runs grep/ls itself (a client without terminals) and in a client
terminal. Real processes: the agent, the fake model server, the commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import acpstack.events as events
from acpstack import spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

pytestmark = pytest.mark.timeout(120, func_only=True)
OUTSIDE_SECRET = "TOPSECRET-outside-the-roots"


class Client(ClientRuntime):
    """Offers files and terminals or neither; allows everything, keeps every update."""

    def __init__(self, terminal: bool) -> None:
        self.asked: list[acp.RequestPermissionRequest] = []
        self.updates: list[Any] = []
        super().__init__(
            ask=self._allow,
            on_update=lambda sid, update: self.updates.append(update),
            enable_fs=terminal,
            enable_terminal=terminal,
        )

    async def _allow(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.asked.append(request)
        return next(o for o in request.options if o.kind == "allow_once")


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """ws (the cwd) with a symlink to `outside`, `extra` (an additional directory)."""
    ws, extra, outside = tmp_path / "ws", tmp_path / "extra", tmp_path / "outside"
    for folder in (ws, extra, outside):
        folder.mkdir()
    (outside / "creds.txt").write_text(f"SECRET={OUTSIDE_SECRET}\n")
    (ws / "notes.txt").write_text("SECRET inside\n-x marker\n")
    (ws / "link").symlink_to(outside)
    (extra / "more.txt").write_text("SECRET extra\n")
    return {"ws": ws, "extra": extra, "outside": outside}


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_files", {"pattern": "SECRET", "path": "../outside"}),
    ("list_files", {"path": "../outside"}),
    ("search_files", {"pattern": "SECRET", "path": "link"}),
    ("list_files", {"path": "link/"}),
    ("search_files", {"pattern": "SECRET", "path": "OUTSIDE"}),  # absolute, filled in below
    ("search_files", {"pattern": "SECRET"}),
    ("search_files", {"pattern": "SECRET", "path": "EXTRA"}),
    ("search_files", {"pattern": "-x marker"}),
    ("list_files", {}),
    ("search_files", {"pattern": "SECRET", "path": "no-such-dir"}),
]
REFUSED = 5  # the first five leave the roots


@pytest.mark.parametrize("terminal", [False, True], ids=["agent-runs-them", "client-terminal"])
async def test_search_and_list_stay_inside_the_roots(
    tree: dict[str, Path], tmp_path: Path, terminal: bool
) -> None:
    places = {"OUTSIDE": str(tree["outside"]), "EXTRA": str(tree["extra"])}
    calls = [(name, {k: places.get(v, v) for k, v in args.items()}) for name, args in CALLS]
    with FakeOpenAI() as fake:
        fake.scripts += [
            [
                *[
                    ("tool", i, f"c{i}", name, [json.dumps(args)])
                    for i, (name, args) in enumerate(calls)
                ],
                ("finish", "tool_calls"),
            ],
            [("text", "Done."), ("finish", "stop")],
        ]
        client = Client(terminal)
        command = agent_command(fake.url, str(tmp_path / "s.db"))
        async with spawn_agent(command, client, env={"FAKE_KEY": "k"}):
            await client.initialize()
            sid = (
                await client.new_session(
                    str(tree["ws"]), additional_directories=[str(tree["extra"])]
                )
            ).session_id
            result = await client.prompt(sid, "look around")
            tools = list(client.sessions[sid].state.tool_calls.values())
        results = {
            m["tool_call_id"]: m["content"]
            for m in fake.requests[1]["messages"]
            if m["role"] == "tool"
        }
    assert result.stop_reason == "end_turn"  # the turn went on
    assert not client.asked  # read-only tools ask nothing
    everything = json.dumps(fake.requests) + repr(client.updates)
    assert OUTSIDE_SECRET not in everything and "creds.txt" not in everything
    outside = str(tree["outside"])
    for i in range(REFUSED):
        assert results[f"c{i}"].startswith("error: Permission denied: "), results[f"c{i}"]
        assert outside in results[f"c{i}"] and "outside the session's workspace" in results[f"c{i}"]
    assert "link resolves to " in results["c2"]
    assert [t.status for t in tools] == ["failed"] * REFUSED + ["completed"] * 4 + ["failed"]
    assert tools[0].content[-1].content.text == results["c0"].removeprefix("error: ")  # type: ignore[union-attr]
    # Inside the roots everything works, and grep's recursion does not follow `link`.
    assert f"{tree['ws'] / 'notes.txt'}:1:SECRET inside" in results["c5"]
    assert f"{tree['extra'] / 'more.txt'}:1:SECRET extra" in results["c6"]
    assert f"{tree['ws'] / 'notes.txt'}:2:-x marker" in results["c7"]  # a pattern, not options
    assert "notes.txt" in results["c8"] and "link ->" in results["c8"]
    assert results["c9"].startswith("error: Resource not found: ")
    # Only the allowed commands ran in the client's terminals.
    embedded = [
        c
        for u in client.updates
        if isinstance(u, events.ToolCallUpdate) and isinstance(u.content, list)
        for c in u.content
        if isinstance(c, acp.Terminal)
    ]
    assert len(embedded) == (4 if terminal else 0)
