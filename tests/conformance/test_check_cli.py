"""`acpstack check agent` as users run it: table, --json, --junit, exit codes, and clear
errors for bad command lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parent / "peers"
CHECK = [sys.executable, "-m", "acpstack", "check", "agent", "--timeout", "3"]

pytestmark = pytest.mark.timeout(60)


def check(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHECK, *args], capture_output=True, text=True, timeout=50, cwd=cwd, env=env
    )


def test_json_and_junit_reports(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    agent = [sys.executable, str(PEERS / "raw_agent.py")]
    done = check("--json", "--junit", str(junit), "--only", "init,prompt.stop-reason", "--", *agent)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["exitCode"] == 0
    assert report["agentInfo"]["name"] == "raw-test-agent"
    ids = [r["id"] for r in report["results"]]
    assert ids[:2] == ["init.protocol-v1", "init.protocol-v2"] and "prompt.stop-reason" in ids
    assert all(r["rule"]["source"].startswith("http") for r in report["results"])
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "0"
    assert len(suite.findall("testcase")) == len(ids)


def test_a_failure_shows_expected_got_and_fix_and_exits_1(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    agent = [sys.executable, str(PEERS / "wrong_stop_reason.py")]
    done = check("--junit", str(junit), "--only", "prompt.stop-reason", "--", *agent)
    assert done.returncode == 1
    out = done.stdout
    assert "FAIL  prompt.stop-reason" in out
    assert "expected: a result {stopReason: end_turn" in out
    assert '"stopReason":"done"' in out  # the frame that came back
    assert "fix: Answer session/prompt with one of the five stop reasons" in out
    assert "0 passed, 1 failed" in out
    failure = ET.parse(junit).getroot().find("testcase/failure")
    assert failure is not None and "stopReason 'done'" in failure.get("message", "")


@pytest.mark.parametrize("form", ["python peers/raw_agent.py", "./agent"])
def test_a_relative_agent_command_means_what_it_means_in_the_users_directory(
    tmp_path: Path, form: str
) -> None:
    # The agent process runs in the directory `check` was started in (its sessions get a
    # scratch workspace as their cwd): a relative script or program path is found.
    (tmp_path / "peers").symlink_to(PEERS, target_is_directory=True)
    agent = tmp_path / "agent"
    agent.write_text(f'#!/bin/sh\nexec "{sys.executable}" peers/raw_agent.py "$@"\n')
    agent.chmod(0o755)
    command = [sys.executable, "peers/raw_agent.py"] if form.startswith("python") else ["./agent"]
    done = check("--only", "session.new,prompt.stop-reason", "--", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout


def test_the_docs_list_every_case() -> None:
    from acpstack.conformance import all_cases

    docs = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text()
    missing = [case.id for case in all_cases() if f"| `{case.id}` |" not in docs]
    assert missing == []


def test_list_names_every_case() -> None:
    done = subprocess.run([*CHECK, "--list"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert "init.protocol-v2" in done.stdout and "unstable.fork" in done.stdout
    # each case with how binding its rule is: only MUST and schema rules can fail
    assert any(
        line.split()[:2] == ["session.unknown-id", "MAY"] for line in done.stdout.splitlines()
    )
    assert any(
        line.split()[:2] == ["robust.not-an-object", "robustness"]
        for line in done.stdout.splitlines()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "name the agent to check"),
        (("--only", "no.such-case", "--", "true"), "no case matches no.such-case"),
        (("--url", "http://127.0.0.1:1/acp", "--", "true"), "either --url or an agent command"),
        (("--", "/no/such/agent-binary"), "cannot start the agent `/no/such/agent-binary`"),
    ],
)
def test_bad_command_lines_exit_2_with_a_clear_message(args: tuple[str, ...], message: str) -> None:
    done = check(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_without_jsonschema_the_check_says_which_extra_to_install() -> None:
    # A real interpreter in which `import jsonschema` fails, as in a plain install.
    code = (
        "import sys; sys.modules['jsonschema'] = None\n"
        "from acpstack.cli import main\n"
        "sys.exit(main(['check', 'agent', '--', 'true']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert 'pip install ".[check]"' in done.stderr
    assert 'pip install ".[check]"' in done.stderr
    assert done.stdout == ""


def test_the_check_leaves_the_users_session_store_alone(tmp_path: Path) -> None:
    # `acpstack agent` keeps its sessions in ACPSTACK_STORE (else the XDG data directory):
    # the check runs it with temporary ones, removed at the end.
    user, scratch = tmp_path / "user", tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(user / "data"),
        "XDG_STATE_HOME": str(user / "state"),
        "ACPSTACK_STORE": str(user / "sessions.sqlite3"),
        "TMPDIR": str(scratch),
    }
    agent = [sys.executable, "-m", "acpstack", "agent"]
    only = ["--only", "session.new,prompt.stop-reason"]
    done = check(*only, "--", *agent, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout
    assert not user.exists()  # nothing of the user's was touched
    assert list(scratch.iterdir()) == []  # and the check's own directories are gone
    # with --user-state the agent writes where the user's variables say (so the
    # assertion above can fail)
    done = check("--user-state", *only, "--", *agent, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (user / "sessions.sqlite3").exists()


def test_a_dead_agent_is_one_failure_and_a_slow_one_is_measured() -> None:
    dead = check("--", sys.executable, str(PEERS / "dead_at_start.py"))
    assert dead.returncode == 1
    assert "FAIL  start.initialize" in dead.stdout
    assert "exited before answering initialize" in dead.stdout
    assert "0 passed, 1 failed, 0 warnings, 0 skipped" in dead.stdout
    slow = check(
        "--timeout", "2.5", "--only", "session.new", "--", sys.executable,
        str(PEERS / "slow_start.py"), "3",
    )  # fmt: skip
    assert slow.returncode == 0, slow.stdout + slow.stderr
    assert "1 passed, 0 failed" in slow.stdout
    assert "start-up 3." in slow.stdout and "(start-up allowance 60 s)" in slow.stdout


def test_proxy_cases_pass_for_a_proxy_and_fail_for_an_agent() -> None:
    # A Proxy subclass, and the conductor in proxy mode, are proxies; the reference agent is not.
    root = Path(__file__).resolve().parents[2]
    proxy = [sys.executable, str(root / "tests" / "proxy" / "peers" / "pass_proxy.py")]
    done = check("--proxy", "--", *proxy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed, 0 failed" in done.stdout
    conductor = [sys.executable, "-m", "acpstack", "conduct", "--proxy", " ".join(proxy)]
    assert "3 passed, 0 failed" in check("--proxy", "--", *conductor).stdout
    agent = check("--proxy", "--", sys.executable, "-m", "acpstack", "agent", "--store", ":memory:")
    assert agent.returncode == 1 and "0 passed, 3 failed" in agent.stdout
