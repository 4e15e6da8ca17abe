"""examples/resume.py, the example of docs/remote.md "What survives a broken connection",
runs as written: a real server, a real TCP proxy that cuts the connections mid-turn, our
client over both profiles (the example asserts every chunk once, in order, and a resume)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def test_the_resume_example_runs_and_resumes_over_both_profiles() -> None:
    done = subprocess.run(
        [sys.executable, "examples/resume.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["http", "ws"], done.stdout
    assert all("end_turn, 300 chunks once each, in order" in line for line in lines), done.stdout
