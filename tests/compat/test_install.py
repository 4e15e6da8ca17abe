"""`./run compat-install VENV` and `--undo` on a fresh virtual environment (one build, one
install each way: about 30 s here, most of it pip)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

VERSION = "import importlib.metadata as m; print(m.version('agent-client-protocol'))"
ORIGIN = "import acp.core, pathlib; print(pathlib.Path(acp.core.__file__).read_text()[:2000])"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, text=True, capture_output=True, timeout=300)


def test_compat_install_and_undo_on_a_fresh_venv(tmp_path: Path) -> None:
    env_dir = tmp_path / "app"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    pip = (python, "-m", "pip", "--disable-pip-version-check")
    official = run(*pip, "install", "--quiet", "agent-client-protocol==0.12.1")
    assert official.returncode == 0, official.stderr

    done = run(str(ROOT / "run"), "compat-install", str(env_dir))
    assert done.returncode == 0, done.stderr
    assert "0.12.1 -> 0.12.1+acpstack.1" in done.stdout
    assert "No broken requirements" in done.stdout
    assert run(python, "-c", VERSION).stdout.strip() == "0.12.1+acpstack.1"
    assert "acpstack's runtime" in run(python, "-c", ORIGIN).stdout
    # An application's exact pin is still satisfied: pip changes nothing.
    pinned = run(*pip, "install", "agent-client-protocol==0.12.1")
    assert pinned.returncode == 0, pinned.stderr
    assert "Requirement already satisfied: agent-client-protocol==0.12.1" in pinned.stdout
    assert run(python, "-c", VERSION).stdout.strip() == "0.12.1+acpstack.1"

    undone = run(str(ROOT / "run"), "compat-install", "--undo", str(env_dir))
    assert undone.returncode == 0, undone.stderr
    assert run(python, "-c", VERSION).stdout.strip() == "0.12.1"
    assert "acpstack" not in run(python, "-c", ORIGIN).stdout


def test_compat_install_refuses_what_is_not_a_venv(tmp_path: Path) -> None:
    result = run(sys.executable, str(ROOT / "tools" / "compat_install.py"), str(tmp_path))
    assert result.returncode == 1
    assert "is not a virtual environment" in result.stderr
