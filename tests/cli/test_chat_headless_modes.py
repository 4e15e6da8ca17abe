"""Headless `acpstack chat`: every exit code, the result record, the output formats,
--timeout with nothing left running, and the session setup flags (--mode, --config,
--mcp-config, --permissions, --auth, --no-fs, --no-terminal). Real chat processes against
peers/chat_agent.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from procs import assert_ended, children, cmdline  # noqa: E402

AGENT = [sys.executable, str(PEERS / "chat_agent.py")]
CHAT = [sys.executable, "-m", "acpstack", "chat"]


class Peer:
    def __init__(self, tmp_path: Path) -> None:
        self.folder = tmp_path
        self.log = tmp_path / "peer.jsonl"
        self.env = dict(os.environ, PEER_LOG=str(self.log))

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CHAT, *args, "--", *AGENT],
            cwd=self.folder,
            env=env or self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def entries(self, key: str) -> list[Any]:
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [line[key] for line in lines if key in line]


@pytest.fixture
def peer(tmp_path: Path) -> Peer:
    return Peer(tmp_path)


def result_record(stdout: str) -> dict[str, Any]:
    *_, last = (json.loads(line) for line in stdout.splitlines() if line.strip())
    assert last["type"] == "result"
    return last


# -- exit codes and the result record -------------------------------------------------------


def test_success_is_0_with_a_result_record(peer: Peer) -> None:
    done = peer.run("-p", "usage", "--format", "json")
    assert done.returncode == 0, done.stderr
    record = result_record(done.stdout)
    assert record["exitCode"] == 0 and record["stopReason"] == "end_turn"
    assert record["sessionId"].startswith("s") and record["error"] is None
    assert record["usage"] == {"used": 1234, "size": 8192}
    assert record["permissions"] == {"requested": 0, "approved": 0, "denied": 0}


def test_an_agent_error_is_1(peer: Peer) -> None:
    done = peer.run("-p", "fail", "--format", "json")
    assert done.returncode == 1
    record = result_record(done.stdout)
    assert record["exitCode"] == 1 and "the model is unreachable" in record["error"]
    assert "Traceback" not in done.stderr and "the model is unreachable" in done.stderr


def test_an_agent_that_cannot_start_is_1(peer: Peer) -> None:
    done = subprocess.run(
        [*CHAT, "-p", "hi", "--format", "json", "--", "/nonexistent/agent"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "/nonexistent/agent" in done.stderr
    assert result_record(done.stdout)["exitCode"] == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--allow", "bogus"], "invalid choice: 'bogus'"),
        (["--timeout", "0"], "must be a positive number of seconds"),
        (["--config", "novalue"], "expected KEY=VALUE"),
        (["--approve-all", "--deny-all"], "not allowed with argument"),
        (["--json", "--format", "quiet"], "contradict"),
        (["--cwd", "/nonexistent/dir"], "not a directory"),
        (["--mode", "bogus"], "unknown mode 'bogus'; the session's modes: ask, code"),
        (["--config", "verbose=maybe"], "verbose is true or false"),
        (["--config", "nope=1"], "unknown config option 'nope'"),
        (["--permissions", "/nonexistent.toml"], "cannot read the permissions file"),
        (["--mcp-config", "/nonexistent.json"], "cannot read the MCP config file"),
    ],
)
def test_usage_errors_are_2_and_one_line(peer: Peer, flags: list[str], message: str) -> None:
    done = peer.run("-p", "hi", *flags)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert peer.entries("text") == []  # no prompt reached the agent


def test_a_timeout_is_3_and_leaves_no_process_behind(peer: Peer) -> None:
    chat = subprocess.Popen(
        [*CHAT, "-p", "hang", "--timeout", "3", "--format", "json", "--", *AGENT],
        cwd=peer.folder,
        env=peer.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert chat.stdout is not None
        for line in chat.stdout:  # the agent's terminal runs once its tool call is reported
            if '"tool_call"' in line:
                break
        kids = children(chat.pid)
        assert any(cmdline(pid).startswith("sleep 600") for pid in kids), [cmdline(p) for p in kids]
        rest, stderr = chat.communicate(timeout=30)
    finally:
        chat.kill()
        chat.wait()
    assert chat.returncode == 3, stderr
    assert "timed out after 3 s" in stderr
    record = result_record(rest)
    assert record["exitCode"] == 3 and "timed out" in record["error"]
    assert_ended(kids)  # the agent and the command it ran in a client terminal


def test_no_such_session_is_4(peer: Peer) -> None:
    done = peer.run("-p", "hi", "--session", "nope", "--format", "json")
    assert done.returncode == 4
    assert "no such session 'nope'" in done.stderr
    assert result_record(done.stdout)["exitCode"] == 4


def test_every_permission_denied_is_5_and_one_approval_is_0(peer: Peer) -> None:
    done = peer.run("-p", "ask 2", "--deny-all", "--format", "json")
    assert done.returncode == 5, done.stderr
    record = result_record(done.stdout)
    assert record["permissions"] == {"requested": 2, "approved": 0, "denied": 2}
    assert record["stopReason"] == "end_turn" and record["exitCode"] == 5
    done = peer.run("-p", "ask 2")  # no rule: rejected, and said so
    assert done.returncode == 5 and "rejected 'Act 0'" in done.stderr
    done = peer.run("-p", "ask 2", "--allow", "edit")
    assert done.returncode == 0, done.stderr
    assert "approved 'Act 1' (--allow edit)" in done.stderr


def test_interrupted_is_130(peer: Peer) -> None:
    chat = subprocess.Popen(
        [*CHAT, "-p", "hang", "--format", "json", "--", *AGENT],
        cwd=peer.folder,
        env=peer.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert chat.stdout is not None
        for line in chat.stdout:
            if '"tool_call"' in line:
                break
        kids = children(chat.pid)
        chat.send_signal(signal.SIGINT)
        rest, stderr = chat.communicate(timeout=30)
    finally:
        chat.kill()
        chat.wait()
    assert chat.returncode == 130, stderr
    assert result_record(rest)["exitCode"] == 130
    assert_ended(kids)


# -- output formats -----------------------------------------------------------------------


def test_text_shows_tool_calls_diffs_and_plans_once(peer: Peer) -> None:
    done = peer.run("-p", "tools")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Build the thing") == 1 and "(completed)" in done.stdout
    assert "[tool] Check the thing (failed)" in done.stdout and "tools done" in done.stdout
    assert "pending" not in done.stdout and "in_progress" not in done.stdout
    done = peer.run("-p", "diff", "--approve-all")
    assert done.stdout.count("+NEW-LINE-MARK") == 1  # with the tool call, not again
    done = peer.run("-p", "plan")
    assert "[x] first step" in done.stdout and "[~] second step" in done.stdout


def test_quiet_prints_only_the_final_answer(peer: Peer) -> None:
    done = peer.run("-p", "tools", "--format", "quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tools done\n"


def test_json_is_the_wire_then_the_result(peer: Peer) -> None:
    done = peer.run("-p", "hello", "--json")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(set(line) == {"direction", "message"} for line in lines[:-1])
    assert lines[-1]["type"] == "result" and lines[-1]["exitCode"] == 0


# -- session setup ----------------------------------------------------------------------------


def test_mode_and_config_are_set_before_the_prompt(peer: Peer) -> None:
    done = peer.run("-p", "hi", "--mode", "code", "--config", "verbose=true")
    assert done.returncode == 0, done.stderr
    assert peer.entries("mode") == ["code"] and peer.entries("config") == [{"verbose": True}]


def test_mcp_config_servers_go_to_session_new(peer: Peer) -> None:
    config = peer.folder / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "/bin/cat", "args": ["-u"], "env": {"A": "1"}},
                    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
                }
            }
        )
    )
    done = peer.run("-p", "hi", "--mcp-config", str(config))
    assert done.returncode == 0, done.stderr
    [servers] = peer.entries("mcp")
    assert servers == [
        {
            "name": "files",
            "command": "/bin/cat",
            "args": ["-u"],
            "env": [{"name": "A", "value": "1"}],
        },
        {
            "type": "http",
            "name": "web",
            "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "X", "value": "y"}],
        },
    ]
    config.write_text("{not json")
    done = peer.run("-p", "hi", "--mcp-config", str(config))
    assert done.returncode == 2 and "is not valid JSON" in done.stderr


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_permission_rules_from_a_file(peer: Peer, suffix: str) -> None:
    rules = peer.folder / f"rules{suffix}"
    if suffix == ".toml":
        rules.write_text('[[rules]]\ndecision = "allow"\nkinds = ["edit"]\n')
    else:
        rules.write_text(json.dumps({"rules": [{"decision": "allow", "kinds": ["edit"]}]}))
    done = peer.run("-p", "ask 1", "--permissions", str(rules))
    assert done.returncode == 0, done.stderr
    assert f"approved 'Act 0' (rule 1 of {rules})" in done.stderr
    rules.write_text(
        '[[rules]]\ndecision = "maybe"\n'
        if suffix == ".toml"
        else '{"rules": [{"kinds": ["nope"], "decision": "allow"}]}'
    )
    done = peer.run("-p", "ask 1", "--permissions", str(rules))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("decision" if suffix == ".toml" else "unknown tool kinds ['nope']") in done.stderr


def test_no_fs_and_no_terminal_are_not_offered(peer: Peer) -> None:
    peer.run("-p", "hi")
    peer.run("-p", "hi", "--no-fs", "--no-terminal")
    assert peer.entries("fs") == [True, False] and peer.entries("terminal") == [True, False]


def test_auth_method_chosen_without_a_prompt(peer: Peer) -> None:
    env = dict(peer.env, PEER_AUTH="1")
    done = peer.run("-p", "hi", "--auth", "key", env=env)
    assert done.returncode == 0, done.stderr
    assert peer.entries("authenticate") == ["key"]
    done = peer.run("-p", "hi", env=env)
    assert done.returncode == 1 and "give --auth METHOD, one of: key (API key)" in done.stderr
    done = peer.run("-p", "hi", "--auth", "bogus", env=env)
    assert done.returncode == 2 and "--auth bogus: the agent offers key (API key)" in done.stderr


def test_headless_offers_no_elicitation(peer: Peer) -> None:
    done = peer.run("-p", "form")
    assert done.returncode == 0 and "elicitation not offered" in done.stdout
