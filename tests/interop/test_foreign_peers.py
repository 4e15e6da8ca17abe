"""Sanity checks of the foreign ACP peers (official Python and TypeScript SDKs).

Every client peer is run against every agent peer, so the scripted behaviour and
the report format are known to be right before acpstack is tested against them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _foreign  # noqa: E402

# The one-off SDK installs happen in fixture setup; keep the per-test timeout for
# the tests themselves (the install commands carry their own timeout).
pytestmark = pytest.mark.timeout(120, func_only=True)

NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
RUN_TIMEOUT = 90

ClientFactory = Callable[..., list[str]]


@pytest.fixture(scope="session")
def py_sdk_ready() -> Path:
    return _foreign.python_sdk_python()


@pytest.fixture(scope="session")
def node_sdk_ready() -> Path:
    node_dir = _foreign.node_sdk_dir()
    # node is present (the tests using this are skipped otherwise): npm must be too.
    assert node_dir is not None, "node is on PATH but npm is not"
    return node_dir


def _agent(kind: str, request: pytest.FixtureRequest) -> list[str]:
    if kind == "py":
        request.getfixturevalue("py_sdk_ready")
        return _foreign.py_sdk_agent_cmd()
    request.getfixturevalue("node_sdk_ready")
    return _foreign.ts_agent_cmd()


def _client(kind: str, request: pytest.FixtureRequest) -> ClientFactory:
    if kind == "py":
        request.getfixturevalue("py_sdk_ready")
        return _foreign.py_sdk_client_cmd
    request.getfixturevalue("node_sdk_ready")
    return _foreign.ts_client_cmd


PAIRS = [
    pytest.param(("py", "py"), id="py_client-py_agent"),
    pytest.param(("py", "ts"), id="py_client-ts_agent", marks=NEEDS_NODE),
    pytest.param(("ts", "py"), id="ts_client-py_agent", marks=NEEDS_NODE),
    pytest.param(("ts", "ts"), id="ts_client-ts_agent", marks=NEEDS_NODE),
]


class Pair:
    def __init__(self, client: str, agent: str, request: pytest.FixtureRequest, cwd: Path) -> None:
        self.client_kind = client
        self.agent_kind = agent
        self._client = _client(client, request)
        self._agent = _agent(agent, request)
        self._cwd = cwd

    def run(self, *options: str) -> dict[str, Any]:
        argv = self._client(self._agent, "--cwd", str(self._cwd), *options)
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert proc.returncode == 0, (
            f"{argv} exited {proc.returncode}\n--- stderr ---\n{proc.stderr}\n"
            f"--- stdout ---\n{proc.stdout}"
        )
        lines = proc.stdout.splitlines()
        assert len(lines) == 1, f"expected one JSON line on stdout, got: {proc.stdout!r}"
        report: dict[str, Any] = json.loads(lines[0])
        self._check_common(report)
        return report

    def prompts(self, *prompts: str, permission: str = "allow") -> dict[str, Any]:
        opts = ["--permission", permission]
        for p in prompts:
            opts += ["--prompt", p]
        report = self.run(*opts)
        assert [t["prompt"] for t in report["turns"]] == list(prompts)
        return report

    def _check_common(self, report: dict[str, Any]) -> None:
        init = report["initialize"]
        assert init["protocolVersion"] == 1
        assert init["agentInfo"]["name"] == f"{self.agent_kind}-sdk-agent"
        assert init["agentCapabilities"]["loadSession"] is False
        assert isinstance(report["sessionId"], str) and report["sessionId"]
        assert report["agentExitCode"] == 0, "agent did not exit cleanly on stdin EOF"
        assert report["lateUpdates"] == []
        for turn in report["turns"]:
            # the SDK client accepted every update the agent sent
            assert len(turn["sdkUpdates"]) == len(turn["updates"]), turn


@pytest.fixture(params=PAIRS)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Pair:
    client, agent = request.param
    return Pair(client, agent, request, tmp_path)


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def texts(turn: dict[str, Any]) -> list[str]:
    return [
        u["content"]["text"] for u in turn["updates"] if u["sessionUpdate"] == "agent_message_chunk"
    ]


# --------------------------------------------------------------------------- tests


def test_echo(pair: Pair) -> None:
    report = pair.prompts("hello  world, 1 2 3")
    (turn,) = report["turns"]
    assert turn["error"] is None
    assert turn["stopReason"] == "end_turn"
    assert turn["updates"] == [chunk("echo: hello  world, 1 2 3")]
    assert turn["sdkUpdates"] == turn["updates"]


def test_stream_50_in_order(pair: Pair) -> None:
    report = pair.prompts("stream 50")
    (turn,) = report["turns"]
    assert turn["stopReason"] == "end_turn"
    assert turn["updates"] == [chunk(f"chunk-{i:08d} ") for i in range(1, 51)]
    assert turn["sdkUpdates"] == turn["updates"]


@pytest.mark.parametrize(
    ("answer", "line", "status", "stop"),
    [
        ("allow", "permission: selected allow", "completed", "end_turn"),
        ("reject", "permission: selected reject", "failed", "end_turn"),
        ("cancel", "permission: cancelled", "failed", "cancelled"),
    ],
)
def test_permission(pair: Pair, answer: str, line: str, status: str, stop: str) -> None:
    report = pair.prompts("permission", permission=answer)
    (turn,) = report["turns"]
    assert turn["error"] is None
    assert turn["stopReason"] == stop
    assert turn["updates"] == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call-1",
            "title": "Edit file",
            "kind": "edit",
            "status": "pending",
        },
        chunk(line),
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": status},
    ]
    (req,) = report["permissionRequests"]
    assert req["sessionId"] == report["sessionId"]
    assert req["toolCall"]["toolCallId"] == "call-1"
    assert [(o["optionId"], o["kind"]) for o in req["options"]] == [
        ("allow", "allow_once"),
        ("allow-always", "allow_always"),
        ("reject", "reject_once"),
        ("reject-always", "reject_always"),
    ]
    assert all(isinstance(o["name"], str) and o["name"] for o in req["options"])


def test_read_write_real_files(pair: Pair, tmp_path: Path) -> None:
    src = tmp_path / "src.txt"
    src.write_text("alpha\nbeta\ngamma\ndelta\n", encoding="utf-8")
    dst = tmp_path / "out" / "new.txt"
    dst.parent.mkdir()
    missing = tmp_path / "missing.txt"
    report = pair.prompts(
        f"read {src}",
        f"read {src} line=2 limit=2",
        f"write {dst} first line\n  second  line ",
        f"read {dst}",
        f"read {missing}",
    )
    turns = report["turns"]
    assert [t["stopReason"] for t in turns] == ["end_turn"] * 5
    assert [t["error"] for t in turns] == [None] * 5
    assert texts(turns[0]) == ["read: alpha\nbeta\ngamma\ndelta\n"]
    assert texts(turns[1]) == ["read: beta\ngamma\n"]
    assert texts(turns[2]) == [f"wrote: {dst}"]
    assert dst.read_text(encoding="utf-8") == "first line\n  second  line "
    assert texts(turns[3]) == ["read: first line\n  second  line "]
    (err,) = texts(turns[4])
    assert err.startswith("error: -32002 "), err
    assert report["fsReads"] == [
        {"path": str(src), "line": None, "limit": None},
        {"path": str(src), "line": 2, "limit": 2},
        {"path": str(dst), "line": None, "limit": None},
        {"path": str(missing), "line": None, "limit": None},
    ]
    assert report["fsWrites"] == [{"path": str(dst), "content": "first line\n  second  line "}]


def test_cancel_scenario(pair: Pair) -> None:
    report = pair.run("--scenario", "cancel")
    (turn,) = report["turns"]
    assert turn["prompt"] == "wait"
    assert turn["error"] is None
    assert turn["stopReason"] == "cancelled"
    assert turn["updates"][0] == chunk("waiting")


def test_cancel_while_permission_pending(pair: Pair) -> None:
    # the client holds the permission request until it cancels, then answers "cancelled"
    report = pair.run("--scenario", "cancel", "--prompt", "permission", "--permission", "hold")
    (turn,) = report["turns"]
    assert turn["stopReason"] == "cancelled"
    assert turn["updates"][0]["sessionUpdate"] == "tool_call"
    assert chunk("permission: cancelled") in turn["updates"]


def test_many_turns_one_session(pair: Pair) -> None:
    report = pair.prompts("one", "stream 3", "two")
    assert [t["stopReason"] for t in report["turns"]] == ["end_turn"] * 3
    assert [texts(t) for t in report["turns"]] == [
        ["echo: one"],
        ["chunk-00000001 ", "chunk-00000002 ", "chunk-00000003 "],
        ["echo: two"],
    ]
