"""`acpstack chat` headless (-p, --json, permission flags), `sessions`, `demo`, and `acpstack agent`
driven by the official SDKs' clients. Real processes all the way."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import _foreign  # noqa: E402

pytestmark = pytest.mark.timeout(180, func_only=True)
ACPSTACK = [sys.executable, "-m", "acpstack"]
NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    return workspace


def run(args: list[str], ws: Path, *, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ACPSTACK_STORE=str(ws.parent / "sessions.db"))
    return subprocess.run(
        [*ACPSTACK, *args], cwd=ws, env=env, input=stdin, capture_output=True, text=True, timeout=90
    )


def wire(stdout: str) -> list[dict[str, Any]]:
    """The wire records of `--json` output, without the result record that ends it."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert lines[-1]["type"] == "result"
    return lines[:-1]


def test_headless_prompt_with_approve_all_edits(ws: Path) -> None:
    result = run(["chat", "-p", "/edit README.md Readme Hello", "--approve-all"], ws)
    assert result.returncode == 0, result.stderr
    assert (ws / "README.md").read_text() == "# Hello\n"
    assert "approved 'Edit README.md' (--approve-all)" in result.stderr


def test_headless_deny_all_and_no_flag_never_approve(ws: Path) -> None:
    for flags in (["--deny-all"], []):
        result = run(["chat", "-p", "/edit README.md Readme Hello", *flags], ws)
        assert result.returncode == 5, result.stderr  # every permission request was denied
        assert (ws / "README.md").read_text() == "# Readme\n"
        assert "unchanged" in result.stdout


def test_headless_allow_by_tool_kind(ws: Path) -> None:
    result = run(["chat", "-p", "note this", "--allow", "edit"], ws)
    assert result.returncode == 0, result.stderr
    assert (ws / "README.md").read_text().endswith("- note this\n")  # the edit was allowed
    assert re.search(r"rejected 'Run `ls -la`'", result.stderr)  # the command was not


def test_headless_prompt_from_stdin(ws: Path) -> None:
    result = run(["chat"], ws, stdin="/read README.md\n")
    assert result.returncode == 0, result.stderr
    assert "# Readme" in result.stdout


def test_json_against_our_agent(ws: Path) -> None:
    result = run(["chat", "-p", "/edit README.md Readme Hello", "--approve-all", "--json"], ws)
    assert result.returncode == 0, result.stderr
    lines = wire(result.stdout)
    assert all(
        set(line) == {"direction", "message"} and line["message"]["jsonrpc"] == "2.0"
        for line in lines
    )
    sent = [line["message"] for line in lines if line["direction"] == "send"]
    received = [line["message"] for line in lines if line["direction"] == "recv"]
    assert [m.get("method") for m in sent[:2]] == ["initialize", "session/new"]
    asks = [m for m in received if m.get("method") == "session/request_permission"]
    assert len(asks) == 1
    answer = next(m for m in sent if m.get("id") == asks[0]["id"] and "result" in m)
    assert answer["result"]["outcome"] == {"outcome": "selected", "optionId": "allow_once"}
    prompt = next(m for m in sent if m.get("method") == "session/prompt")
    # Ids are per direction: the agent's own requests may reuse the number.
    final = next(m for m in received if m.get("id") == prompt["id"] and "method" not in m)
    assert final["result"]["stopReason"] == "end_turn"
    assert any(
        m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "tool_call"
        for m in received
    )


@pytest.fixture(scope="module")
def py_sdk_agent() -> list[str]:
    _foreign.python_sdk_python()
    return _foreign.py_sdk_agent_cmd()


@pytest.mark.parametrize(
    ("flag", "expected"), [("--approve-all", "allow"), ("--deny-all", "reject")]
)
def test_chat_with_an_official_python_sdk_agent(
    ws: Path, py_sdk_agent: list[str], flag: str, expected: str
) -> None:
    result = run(["chat", "-p", "permission", flag, "--json", "--", *py_sdk_agent], ws)
    assert result.returncode == (0 if expected == "allow" else 5), result.stderr
    lines = wire(result.stdout)
    init = next(
        line["message"]
        for line in lines
        if line["direction"] == "recv" and line["message"].get("id") == 0
    )
    assert init["result"]["agentInfo"]["name"] == "py-sdk-agent"
    asks = [
        line["message"]
        for line in lines
        if line["direction"] == "recv"
        and line["message"].get("method") == "session/request_permission"
    ]
    assert len(asks) == 1
    texts = "".join(
        line["message"]["params"]["update"]["content"]["text"]
        for line in lines
        if line["direction"] == "recv"
        and line["message"].get("method") == "session/update"
        and line["message"]["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert f"permission: selected {expected}" in texts


def test_chat_with_an_official_python_sdk_agent_renders_the_turn(
    ws: Path, py_sdk_agent: list[str]
) -> None:
    result = run(["chat", "-p", "stream 5", "--", *py_sdk_agent], ws)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("chunk-") == 5


def test_an_agent_that_exits_at_once_is_a_clear_error(ws: Path) -> None:
    result = run(
        [
            "chat",
            "-p",
            "hi",
            "--",
            sys.executable,
            "-c",
            "import sys; print('no key configured', file=sys.stderr); sys.exit(3)",
        ],
        ws,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "exit" in result.stderr.lower() and "no key configured" in result.stderr
    result = run(["chat", "-p", "hi", "--", "/nonexistent/agent"], ws)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "/nonexistent/agent" in result.stderr


def test_sessions_lists_what_chat_created(ws: Path) -> None:
    first = run(["chat", "-p", "/read README.md", "--json"], ws)
    sid = next(
        line["message"]["result"]["sessionId"]
        for line in wire(first.stdout)
        if line["direction"] == "recv" and line["message"].get("id") == 1
    )
    listed = run(["sessions", "agent", "--cwd", str(ws)], ws)  # the agent's own list
    assert listed.returncode == 0, listed.stderr
    assert sid in listed.stdout
    recorded = run(["sessions", "list", "--format", "json"], ws)  # what the chat recorded
    assert [r["session_id"] for r in json.loads(recorded.stdout)] == [sid]
    again = run(["chat", "--session", sid, "-p", "/plan"], ws)
    assert again.returncode == 0, again.stderr


def test_demo_runs_non_interactively_and_leaves_the_edit(tmp_path: Path) -> None:
    result = subprocess.run(
        [*ACPSTACK, "demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    match = re.search(r"a copy of a sample project is in (\S+)", result.stdout)
    assert match
    project = Path(match.group(1))
    try:
        assert (
            (project / "README.md")
            .read_text()
            .rstrip()
            .endswith("Add a line about running the tests with unittest to the notes")
        )
        assert "stdin is not a terminal" in result.stderr + result.stdout
    finally:
        shutil.rmtree(project.parent, ignore_errors=True)


def _foreign_client_report(cmd: list[str]) -> dict[str, Any]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _reference_agent(ws: Path) -> list[str]:
    return [*ACPSTACK, "agent", "--store", str(ws.parent / "agent.db")]


@NEEDS_NODE
def test_acpstack_agent_driven_by_the_typescript_client(ws: Path) -> None:
    _foreign.node_sdk_dir()
    cmd = _foreign.ts_client_cmd(
        _reference_agent(ws),
        "--cwd",
        str(ws),
        "--permission",
        "allow",
        "--prompt",
        "/edit README.md Readme Hello",
    )
    report = _foreign_client_report(cmd)
    assert report["initialize"]["agentInfo"]["name"].startswith("acpstack")
    turn = report["turns"][0]
    assert turn["error"] is None and turn["stopReason"] == "end_turn"
    assert (
        len(report["permissionRequests"]) == 1 and report["fsWrites"][0]["content"] == "# Hello\n"
    )


def test_acpstack_agent_driven_by_the_python_sdk_client(ws: Path) -> None:
    _foreign.python_sdk_python()
    cmd = _foreign.py_sdk_client_cmd(
        _reference_agent(ws),
        "--cwd",
        str(ws),
        "--permission",
        "reject",
        "--prompt",
        "/edit README.md Readme Hello",
    )
    report = _foreign_client_report(cmd)
    turn = report["turns"][0]
    assert turn["error"] is None and turn["stopReason"] == "end_turn"
    assert len(report["permissionRequests"]) == 1 and report["fsWrites"] == []


def test_demo_keeps_to_its_own_folder(tmp_path: Path) -> None:
    # The user's directories (here: a home of the test's) stay as they were, and a model
    # set up for `acpstack agent` does not turn the demo's offline agent into a model-backed
    # one (the base URL would refuse: nothing listens on port 9 of 127.0.0.1).
    home = tmp_path / "home"
    user_dirs = {name: home / name for name in ("config", "state", "cache", "data")}
    env = dict(
        os.environ,
        HOME=str(home),
        XDG_CONFIG_HOME=str(user_dirs["config"]),
        XDG_STATE_HOME=str(user_dirs["state"]),
        XDG_CACHE_HOME=str(user_dirs["cache"]),
        XDG_DATA_HOME=str(user_dirs["data"]),
        ACPSTACK_MODEL="a-model",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        OPENAI_API_KEY="not-a-key",
        TMPDIR=str(tmp_path),
    )
    env.pop("ACPSTACK_STORE", None)
    home.mkdir()
    result = subprocess.run(
        [*ACPSTACK, "demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert list(home.iterdir()) == []
    match = re.search(r"a copy of a sample project is in (\S+)", result.stdout)
    assert match
    demo_home = Path(match.group(1)).parent / "home"
    assert (demo_home / "sessions.sqlite3").is_file()
