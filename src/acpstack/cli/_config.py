"""The user's config file (`~/.config/acpstack/config.toml`): agent profiles and defaults.

```toml
default_agent = "mine"            # what `acpstack chat` runs when no agent is named

[agents.mine]                     # `acpstack chat mine`
command = ["python", "-m", "my_agent"]   # or one string, split like a shell does
args = ["--verbose"]              # appended to the command
env = { MY_AGENT_LOG = "debug" }  # added to the environment
mode = "ask"                      # the session mode to switch to after session/new
unstable = true                   # `acpstack chat` speaks ACP's unstable methods with it
description = "my own agent"

[agents.claude-acp]               # no command: the registry entry, with these changes
env = { ANTHROPIC_API_KEY = "..." }
```
A profile overrides the registry entry with the same id.
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpstack.cli._errors import EXIT_USAGE, CliError


@dataclass
class Profile:
    name: str
    command: list[str] | None = None  # None: the registry entry of the same name
    args: list[str] | None = None  # None: the command's own (or the registry's) arguments
    env: dict[str, str] = field(default_factory=dict)
    mode: str | None = None
    description: str = ""
    unstable: bool = False  # the chat opens an unstable connection (as with --unstable)


@dataclass
class Config:
    path: Path | None = None
    default_agent: str | None = None
    profiles: dict[str, Profile] = field(default_factory=dict)


def load_config(path: Path) -> Config:
    """The config at `path` (an empty one when the file does not exist)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):  # no config file: nothing configured
        return Config(path=None)
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}", EXIT_USAGE) from None
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"{path} is not valid TOML: {exc}", EXIT_USAGE) from None
    return parse_config(data, path)


def parse_config(data: dict[str, Any], path: Path) -> Config:
    def bad(where: str, what: str) -> CliError:
        return CliError(f"{path}: `{where}` must be {what}", EXIT_USAGE)

    config = Config(path=path)
    default = data.get("default_agent")
    if default is not None and not isinstance(default, str):
        raise bad("default_agent", "a string")
    config.default_agent = default
    agents = data.get("agents", {})
    if not isinstance(agents, dict):
        raise bad("agents", "a table of agent profiles")
    for name, table in agents.items():
        if not isinstance(table, dict):
            raise bad(f"agents.{name}", "a table")
        config.profiles[name] = _profile(name, table, bad)
    return config


def _profile(name: str, table: dict[str, Any], bad: Any) -> Profile:
    where = f"agents.{name}"
    command = table.get("command")
    if isinstance(command, str):
        command = shlex.split(command)
    if command is not None and (not _strings(command) or not command):
        raise bad(f"{where}.command", "a string or a non-empty list of strings")
    args = table.get("args")
    if args is not None and not _strings(args):
        raise bad(f"{where}.args", "a list of strings")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise bad(f"{where}.env", "a table of strings")
    for key in ("mode", "description"):
        if table.get(key) is not None and not isinstance(table[key], str):
            raise bad(f"{where}.{key}", "a string")
    if not isinstance(table.get("unstable", False), bool):
        raise bad(f"{where}.unstable", "true or false")
    known = ("command", "args", "env", "mode", "description", "unstable")
    unknown = set(table) - set(known)
    if unknown:
        raise bad(f"{where}", f"a table of {', '.join(known)} (not {sorted(unknown)})")
    return Profile(
        name=name,
        command=command,
        args=args,
        env=dict(env),
        mode=table.get("mode"),
        description=table.get("description") or "",
        unstable=table.get("unstable", False),
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
