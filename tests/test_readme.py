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
