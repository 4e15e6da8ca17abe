"""Every `acpstack` command the cli tests start keeps its files (config, session records,
locks, input history, registry cache) in the test's own folders, never the user's."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def own_user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    for variable, folder in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
    ):
        monkeypatch.setenv(variable, str(home / folder))
    monkeypatch.delenv("ACPSTACK_REGISTRY_URL", raising=False)
    return home
