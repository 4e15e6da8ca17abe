"""From an agent's name to the command that starts it: a profile in the user's config, or a
registry entry (npx, uvx or a downloaded binary), profiles first.

npx entries run as `npx -y PACKAGE ARGS...` and uvx entries as `uvx PACKAGE ARGS...`, with
the entry's `env` added to ours. A binary entry is downloaded into the cache on first use
(`prepare`), checked and unpacked, then run with its `args` and `env`. When an entry offers
several distributions, the first that can run here wins: npx (Node.js installed), uvx (uv
installed), then the binary for this platform.
"""

from __future__ import annotations

import difflib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from acpstack.cli._config import Config, Profile
from acpstack.cli._registry._binary import Progress, install, platform_key
from acpstack.cli._registry._model import AgentEntry, Registry, RegistryError, UnknownAgent


@dataclass
class AgentLaunch:
    """How to start one agent."""

    name: str  # the profile or registry id
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    mode: str | None = None  # a profile's default session mode
    unstable: bool = False  # a profile's `unstable = true`: the chat speaks unstable ACP
    how: str = "command"  # "profile", "npx", "uvx", "binary"
    version: str | None = None
    # How many of the last words of `command` are the default arguments (the entry's or
    # the profile's), which a terminal login's arguments replace.
    default_args: int = 0
    # For a binary not downloaded yet: downloads it and returns the real command.
    prepare: Callable[[Progress | None], list[str]] | None = None

    def ready_command(self, progress: Progress | None = None) -> list[str]:
        if self.prepare is not None:
            self.command = self.prepare(progress)
            self.prepare = None
        return self.command


def resolve(
    name: str, config: Config, registry: Registry, cache: Callable[[], Path]
) -> AgentLaunch:
    """The launch of the agent called `name`; RegistryError when there is none (or it
    cannot run here). `cache` gives the folder binaries are unpacked into."""
    profile = config.profiles.get(name)
    entry = registry.get(name)
    if profile is not None and profile.command is not None:
        return _from_profile(profile)
    if entry is None:
        raise UnknownAgent(_unknown(name, config, registry))
    launch = from_entry(entry, cache, args=profile.args if profile is not None else None)
    if profile is not None:  # a profile without a command adjusts the registry entry
        launch.env.update(profile.env)
        launch.mode = profile.mode
        launch.unstable = profile.unstable
    return launch


def _from_profile(profile: Profile) -> AgentLaunch:
    assert profile.command is not None
    return AgentLaunch(
        name=profile.name,
        command=[*profile.command, *(profile.args or [])],
        env=dict(profile.env),
        mode=profile.mode,
        unstable=profile.unstable,
        how="profile",
        default_args=len(profile.args or []),
    )


def _unknown(name: str, config: Config, registry: Registry) -> str:
    names = sorted(config.profiles) + [agent.id for agent in registry.agents]
    close = difflib.get_close_matches(name, names, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return (
        f"unknown agent {name!r}{hint}: not a profile in the config file nor an id in the "
        "registry; `acpstack agents` lists them, or give the agent's command after `--`"
    )


def from_entry(
    entry: AgentEntry, cache: Callable[[], Path], *, args: list[str] | None = None
) -> AgentLaunch:
    """How to run `entry` here; `args` replace the entry's own arguments when given."""
    dist = entry.distribution
    for how, package in (("npx", dist.npx), ("uvx", dist.uvx)):
        if package is not None and shutil.which(how):
            extra = package.args if args is None else args
            start = ["npx", "-y"] if how == "npx" else ["uvx"]
            return AgentLaunch(
                entry.id,
                [*start, package.package, *extra],
                dict(package.env),
                how=how,
                version=entry.version,
                default_args=len(extra),
            )
    key = platform_key()
    if dist.binary is not None and key in dist.binary:
        target = dist.binary[key]
        extra = target.args if args is None else args

        def prepare(progress: Progress | None) -> list[str]:
            folder = cache() / entry.id / entry.version / str(key)
            return [str(install(target, folder, progress=progress)), *extra]

        planned = [f"<{entry.id} {entry.version} binary>", *extra]
        return AgentLaunch(
            entry.id,
            planned,
            dict(target.env),
            how="binary",
            version=entry.version,
            default_args=len(extra),
            prepare=prepare,
        )
    raise RegistryError(_cannot_run(entry, key))


def _cannot_run(entry: AgentEntry, key: str | None) -> str:
    dist = entry.distribution
    needs = []
    if dist.npx is not None:
        needs.append("npx (install Node.js)")
    if dist.uvx is not None:
        needs.append("uvx (install uv)")
    if dist.binary is not None:
        needs.append(
            f"a binary for {key or 'this platform'} (it has {', '.join(sorted(dist.binary))})"
        )
    return f"agent {entry.id!r} cannot run here: it needs {' or '.join(needs)}"
