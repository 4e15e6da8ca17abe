"""The README's code is the examples' code, and it runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def code_after(marker: str) -> str:
    start = README.index(marker)
    match = re.search(r"```python\n(.*?)```", README[start:], re.S)
    assert match is not None
    return match.group(1)


def test_readme_examples_are_the_example_files() -> None:
    for name in ("echo_agent.py", "echo_client.py"):
        block = code_after(f"`examples/{name}`")
        assert block == (ROOT / "examples" / name).read_text(), name
        assert len(block.splitlines()) <= {"echo_agent.py": 20, "echo_client.py": 23}[name], name


def test_echo_client_and_agent_run_as_written() -> None:
    out = subprocess.run(
        [sys.executable, "examples/echo_client.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "echo: Hello!\n[end_turn]\n"


def test_quick_start_commands_are_the_run_script() -> None:
    quick = README[README.index("## Quick start") : README.index("## An agent")]
    assert "./run demo" in quick and "./run test" in quick
    run = (ROOT / "run").read_text()
    assert "demo)" in run and "test)" in run
    ci_commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "./run test -q" in ci_commands  # CI runs the README's test command


def section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_readme_install_commands_do_not_assume_pypi() -> None:
    # acpstack is not on PyPI yet: every install goes through a checkout or a wheel.
    for line in README.splitlines():
        if "pip install" in line:
            assert re.search(r'pip install "?(\.\[|dist/)', line), line
    assert 'pipx install ".[cli]"' in section("Install")


def test_readme_chat_examples_parse_as_written() -> None:
    import shlex

    from acpstack.cli import build_parser
    from acpstack.cli._args import split_agent_command

    block = re.search(r"```bash\n(.*?)```", section("Chatting with any agent"), re.S)
    assert block is not None
    lines = [re.split(r"\s#\s", line)[0] for line in block.group(1).splitlines()]
    assert len(lines) >= 10
    for line in lines:
        argv, _ = split_agent_command(shlex.split(line)[1:])
        build_parser().parse_args(argv)  # exits (fails the test) on a wrong option


def test_readme_exit_codes_are_the_commands_own() -> None:
    from acpstack.cli import _errors

    table = dict(re.findall(r"^\| (\d+) \| (\w+)", section("Chatting with any agent"), re.M))
    assert table == {
        str(_errors.EXIT_OK): "success",
        str(_errors.EXIT_ERROR): "error",
        str(_errors.EXIT_USAGE): "usage",
        str(_errors.EXIT_TIMEOUT): "timeout",
        str(_errors.EXIT_NO_SESSION): "no",
        str(_errors.EXIT_DENIED): "the",
        str(_errors.EXIT_INTERRUPTED): "interrupted",
        str(_errors.EXIT_BROKEN_PIPE): "broken",
    }
