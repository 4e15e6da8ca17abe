"""The `acpstack` command line: a correct --help for every command, --version, and one
clear line (never a traceback) for a missing extra or a broken setup."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pexpect
import pytest

ACPSTACK = [sys.executable, "-m", "acpstack"]
COMMANDS = [
    ["chat"],
    ["sessions"],
    ["sessions", "list"],
    ["sessions", "show"],
    ["sessions", "history"],
    ["sessions", "delete"],
    ["sessions", "export"],
    ["sessions", "agent"],
    ["agents"],
    ["agent"],
    ["serve"],
    ["check"],
    ["check", "agent"],
    ["check", "client"],
    ["inspect"],
    ["replay"],
    ["demo"],
]


def acpstack(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns)) if columns else None
    return subprocess.run([*ACPSTACK, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("command", [[], *COMMANDS], ids=lambda c: " ".join(c) or "acpstack")
def test_every_command_has_a_correct_help(command: list[str]) -> None:
    done = acpstack(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {' '.join(['acpstack', *command])}")
    assert done.stdout.count("usage:") == 1  # one usage, made by argparse, not glued to another
    assert "-h, --help" in done.stdout


@pytest.mark.parametrize("command", [[], *COMMANDS], ids=lambda c: " ".join(c) or "acpstack")
def test_every_help_fits_80_columns(command: list[str]) -> None:
    done = acpstack(*command, "--help", columns=80)
    assert done.returncode == 0, done.stderr
    wide = [line for line in done.stdout.splitlines() if len(line) > 80]
    assert not wide, done.stdout


AGENT_COMMANDS = [
    ["chat"],
    ["serve"],
    ["sessions", "agent"],
    ["inspect"],
    ["replay"],
    ["check", "agent"],
]


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_commands_that_take_an_agent_command_say_so(columns: int) -> None:
    for command in AGENT_COMMANDS:
        usage = acpstack(*command, "--help", columns=columns).stdout.split("\n\n")[0]
        assert usage.rstrip().endswith("[-- COMMAND [ARG ...]]"), usage
        assert usage.count("[-- COMMAND [ARG ...]]") == 1, usage
        assert all(len(line) <= max(columns, 80) for line in usage.splitlines()), usage
    done = acpstack("agents", "--", "some-agent")
    assert done.returncode == 2 and "takes no agent command after `--`" in done.stderr


def test_version_comes_from_the_package_metadata() -> None:
    done = acpstack("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"acpstack {metadata.version('acpstack')}"


def test_a_command_is_required() -> None:
    done = acpstack()
    assert done.returncode == 2 and "the following arguments are required: COMMAND" in done.stderr


@pytest.mark.parametrize(
    ("missing", "args", "extra"),
    [
        ("rich", ["chat", "-p", "hi"], "cli"),
        ("platformdirs", ["sessions", "list"], "cli"),
        ("platformdirs", ["agents"], "cli"),
    ],
)
def test_a_missing_extra_is_one_line_with_the_fix(
    missing: str, args: list[str], extra: str
) -> None:
    # The module is made unimportable in that process (as if not installed).
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from acpstack.cli import main\n"
        f"sys.exit(main({args!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"needs the `{extra}` extra" in done.stderr
    # acpstack is not on PyPI: the README's way first (from a checkout), then a wheel.
    checkout = done.stderr.find(f"in the acpstack checkout, pip install '.[{extra}]'")
    wheel = f"acpstack-{metadata.version('acpstack')}-py3-none-any.whl"
    assert 0 <= checkout < done.stderr.find(f"pip install '{wheel}[{extra}]'"), done.stderr
    assert f"pip install 'acpstack[{extra}]'" not in done.stderr


def test_the_line_editor_is_needed_only_at_a_terminal(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['prompt_toolkit'] = None\n"
        "from acpstack.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    agent = [sys.executable, str(Path(__file__).parent / "peers" / "chat_agent.py")]
    headless = subprocess.run(
        [sys.executable, "-c", code, "chat", "-p", "hi", "--", *agent],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert headless.returncode == 0 and "echo: hi" in headless.stdout, headless.stderr
    child = pexpect.spawn(
        sys.executable,
        ["-c", code, "chat", "--", *agent],
        encoding="utf-8",
        timeout=30,
        cwd=str(tmp_path),
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1, child.before
    assert "Traceback" not in child.before and "needs the `cli` extra" in child.before
    assert "prompt_toolkit is not installed" in child.before
