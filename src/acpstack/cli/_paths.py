"""Where the `acpstack` command keeps its files (through platformdirs, so XDG_* are honoured).

- config: `config.toml` (agent profiles, the default agent);
- state: input history, session records, session locks;
- cache: the refreshed registry, downloaded agent binaries.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from acpstack.cli._errors import CliError

APP = "acpstack"
FIX = {
    "state": "XDG_STATE_HOME",
    "cache": "XDG_CACHE_HOME",
    "config": "XDG_CONFIG_HOME",
}


def config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def state_dir(*parts: str) -> Path:
    return _ensure(Path(platformdirs.user_state_dir(APP)).joinpath(*parts), "state")


def cache_dir(*parts: str) -> Path:
    return _ensure(Path(platformdirs.user_cache_dir(APP)).joinpath(*parts), "cache")


def _ensure(path: Path, kind: str) -> Path:
    """The directory, created (private to the user) when missing; a clear error otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise CliError(
            f"cannot use the {kind} directory {path}: {reason} "
            f"(set {FIX[kind]} to a writable directory)"
        ) from None
    return path
