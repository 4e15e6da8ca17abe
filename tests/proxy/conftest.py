"""What the proxy tests share: a project for a chat turn through the example proxies."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a README and the rules file `examples/proxies/rules.py` adds to
    every prompt; the audit proxy writes to `audit.jsonl` in it."""
    (tmp_path / "README.md").write_text("# demo\n")
    (tmp_path / "AGENTS.md").write_text("Always write the tests first.\n")
    monkeypatch.setenv("AUDIT_FILE", str(tmp_path / "audit.jsonl"))
    return tmp_path
