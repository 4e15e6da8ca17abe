"""acpstack.run picks uvloop when installed, the stdlib loop when told to; agents serve on both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CODE = "import asyncio, acpstack\nasync def main():\n    return type(asyncio.get_running_loop()).__module__\nprint(acpstack.run(main()))"
ECHO = Path(__file__).resolve().parents[2] / "examples" / "echo_client.py"


def loop_module(env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_run_uses_uvloop_when_installed_and_asyncio_on_request() -> None:
    pytest.importorskip("uvloop")
    assert loop_module(dict(os.environ)).startswith("uvloop")
    assert loop_module(dict(os.environ, ACPSTACK_EVENT_LOOP="asyncio")).startswith("asyncio")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_the_echo_example_on_either_loop(loop: str) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    env = dict(os.environ, ACPSTACK_EVENT_LOOP=loop)
    done = subprocess.run(
        [sys.executable, str(ECHO)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ECHO.parents[1],
    )
    assert done.returncode == 0, done.stderr
    assert "[end_turn]" in done.stdout
