"""fast-agent's ACP server (`fast-agent serve --transport acp --model passthrough`, written
on the official SDK) running unchanged on the `acp` layer: a text turn, and a tool turn
(permission, then the client's terminal), driven by `acpstack chat`, by the official
TypeScript SDK's client (tests/interop's peer, installed on first use) and by acpx.

fast-agent (Python 3.12+) is installed on first use into a venv of its own under
.cache/interop, with `./run compat-install` run on it (about 80 s, once), and acpx (npm,
0.19.1) beside it; ACPSTACK_FAST_AGENT / ACPSTACK_ACPX name other installs. About 40 s
then; no network once installed (the passthrough model echoes, or calls the tool named in
the prompt)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PASSTHROUGH = ["serve", "--transport", "acp", "--model", "passthrough", "-x"]
TOOL_PROMPT = '***CALL_TOOL execute {"command": "echo hi-from-tool"}'
pytestmark = pytest.mark.timeout(600)  # the first run installs fast-agent


def _fast_agent() -> str:
    given = os.environ.get("ACPSTACK_FAST_AGENT")
    if given:
        return given
    sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))
    from _foreign import fast_agent_script

    return str(fast_agent_script())


FAST_AGENT = ""


@pytest.fixture(scope="module", autouse=True)
def fast_agent() -> str:
    global FAST_AGENT
    FAST_AGENT = _fast_agent()
    return FAST_AGENT


def chat(cwd: Path, prompt: str, *agent_args: str) -> list[dict[str, Any]]:
    """One headless turn; the JSON lines `acpstack chat --json` prints (exit code 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "acpstack", "chat", "--json", "--approve-all"]
        + ["--timeout", "90", "-p", prompt, "--", FAST_AGENT]
        + ["serve", "--transport", "acp", "--model", "passthrough", *agent_args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def updates(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        line["message"]["params"]["update"]
        for line in lines
        if line.get("message", {}).get("method") == "session/update"
    ]


def test_the_agent_runs_on_the_layer() -> None:
    python = Path(FAST_AGENT).parent / "python"
    probe = "import acp, acp._bridge; print(acp.__version__ if hasattr(acp, '__version__') else '')"
    assert subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def test_a_text_turn(tmp_path: Path) -> None:
    lines = chat(tmp_path, "hello from acpstack")
    chunks = [u for u in updates(lines) if u["sessionUpdate"] == "agent_message_chunk"]
    assert [c["content"]["text"] for c in chunks] == ["hello from acpstack"]
    assert lines[-1]["stopReason"] == "end_turn"


def test_a_tool_turn_with_permission_and_terminal(tmp_path: Path) -> None:
    lines = chat(tmp_path, TOOL_PROMPT, "-x")
    asked = [
        line["message"]["method"]
        for line in lines
        if line.get("direction") == "recv"
        and "id" in line.get("message", {})
        and "method" in line["message"]
    ]
    assert asked[0] == "session/request_permission"
    assert "terminal/create" in asked and "terminal/output" in asked
    finished = [u for u in updates(lines) if u.get("status") == "completed"]
    assert "hi-from-tool" in finished[-1]["content"][0]["content"]["text"]
    assert lines[-1]["permissions"]["approved"] == 1
    assert lines[-1]["stopReason"] == "end_turn"


def test_both_turns_driven_by_the_typescript_sdk_client(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    import _foreign

    if not _foreign.node_available():
        pytest.skip("node/npm not found")
    argv = _foreign.ts_client_cmd(
        [FAST_AGENT, *PASSTHROUGH],
        *("--prompt", "hello from ts", "--prompt", TOOL_PROMPT),
        *("--permission", "allow", "--caps", "all", "--timeout", "90"),
    )
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    text, tool = report["turns"]
    assert [t["stopReason"] for t in (text, tool)] == ["end_turn", "end_turn"]
    chunks = [u for u in text["updates"] if u["sessionUpdate"] == "agent_message_chunk"]
    assert [c["content"]["text"] for c in chunks] == ["hello from ts"]
    assert len(report["permissionRequests"]) == 1
    assert report["terminals"] == [{"command": "echo", "args": ["hi-from-tool"], "cwd": None}]
    finished = [u for u in tool["updates"] if u.get("status") == "completed"]
    assert len(finished) == 1


def _acpx() -> str:
    given = os.environ.get("ACPSTACK_ACPX")
    if given:
        return given
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    import _foreign

    script = _foreign.acpx_script()
    if script is None:
        pytest.skip("node/npm not found")
    return str(script)


def test_both_turns_driven_by_acpx(tmp_path: Path) -> None:
    acpx = _acpx()

    def exec_turn(prompt: str) -> list[dict[str, Any]]:
        done = subprocess.run(
            [acpx, "--agent", " ".join([FAST_AGENT, *PASSTHROUGH])]
            + ["--approve-all", "--format", "json", "--timeout", "90", "exec", prompt],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(tmp_path)},  # acpx keeps its sessions there
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    text = exec_turn("hello from acpx")
    chunks = [
        m["params"]["update"]["content"]["text"]
        for m in text
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert chunks == ["hello from acpx"]
    assert text[-1]["result"]["stopReason"] == "end_turn"
    tool = exec_turn(TOOL_PROMPT)
    methods = [m.get("method") for m in tool]
    assert methods.count("session/request_permission") == 1
    assert methods.count("terminal/create") == 1
    statuses = [
        m["params"]["update"].get("status") for m in tool if m.get("method") == "session/update"
    ]
    assert "completed" in statuses
    assert tool[-1]["result"]["stopReason"] == "end_turn"
