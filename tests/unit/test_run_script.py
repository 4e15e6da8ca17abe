"""`./run demo` installs only the cli extra, `./run test` the development set, into one
.venv, in either order and without installing twice; a changed pyproject.toml installs again.

The real `run` script runs in a copy of the checkout's top level whose `.venv/bin` holds
stand-ins for python (pip), acpstack, ruff, mypy and mkdocs that record their arguments: a
real install takes a minute or two and the network (`./run package` and CI do the real ones).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = '#!/bin/sh\necho "$(basename "$0") $*" >> "$RUN_LOG"\n'
DEMO_INSTALL = "python -m pip install --quiet -e .[cli]"
DEV_INSTALL = "python -m pip install --quiet -e .[dev,cli]"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "run", tmp_path / "run")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "acpstack", "ruff", "mypy", "mkdocs"):
        (bin_dir / tool).write_text(STAND_IN)
        (bin_dir / tool).chmod(0o755)
    return tmp_path


def run(checkout: Path, command: str) -> list[str]:
    """`./run COMMAND` in the copy; what the stand-ins were asked to do, in order."""
    log = checkout / "run.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "RUN_LOG": str(log), "ACPSTACK_TEST_WORKERS": "0"}
    subprocess.run(["./run", command], cwd=checkout, env=env, check=True, timeout=60)
    return log.read_text().splitlines() if log.exists() else []


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if "pip install" in line and "--upgrade pip" not in line]


def test_demo_first_installs_the_cli_extra_then_test_adds_the_dev_set(checkout: Path) -> None:
    first = run(checkout, "demo")
    assert installs(first) == [DEMO_INSTALL]
    assert first[-1] == "acpstack demo"
    assert installs(run(checkout, "demo")) == []
    test = run(checkout, "test")
    assert installs(test) == [DEV_INSTALL]
    assert test[-1] == "python -m pytest -n 0"
    assert installs(run(checkout, "test")) == []
    assert installs(run(checkout, "demo")) == []


def test_test_first_leaves_nothing_for_demo_to_install(checkout: Path) -> None:
    assert installs(run(checkout, "test")) == [DEV_INSTALL]
    assert run(checkout, "demo") == ["acpstack demo"]


def test_a_changed_pyproject_installs_again(checkout: Path) -> None:
    run(checkout, "test")
    later = (checkout / ".venv" / ".installed-dev").stat().st_mtime + 10
    os.utime(checkout / "pyproject.toml", (later, later))
    assert installs(run(checkout, "demo")) == [DEMO_INSTALL]
    assert installs(run(checkout, "test")) == [DEV_INSTALL]
