"""`python -m benchmarks.resume_burst` end to end, small: a real `acpstack serve` on an
SQLite file, restarted, then every session resumed at once over HTTP and over WebSocket."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_every_resume_of_the_burst_is_answered(transport: str) -> None:
    argv = [sys.executable, "-m", "benchmarks.resume_burst", "--transport", transport]
    argv += ["--sessions", "12", "--connections", "3", "--turns", "1"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["resumes"] == 12 and result["transport"] == transport
    assert result["resume_slowest_s"] >= result["resume_median_s"] > 0
