"""The ACP agent registry's format (`registry.json`, schema version 1.0.0), parsed with msgspec.

One entry per agent: id, name, version, description and a `distribution` with at least one
of `npx` / `uvx` (a package and its arguments) or `binary` (an archive per platform, the
command inside it, an optional sha256). Unknown fields are ignored (the format grows);
an entry that breaks the schema is left out and reported, never the whole file.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

PLATFORMS = (
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
)
AgentId = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9-]*$")]
Sha256 = Annotated[str, Meta(pattern=r"^[0-9a-fA-F]{64}$")]
NonEmpty = Annotated[str, Meta(min_length=1)]


class RegistryError(Exception):
    """The registry (or an agent from it) cannot be used; the message says why."""


class UnknownAgent(RegistryError):
    """No profile and no registry entry has this name."""


class BinaryTarget(Struct):
    archive: NonEmpty
    cmd: NonEmpty
    sha256: Sha256 | None = None
    args: list[str] = []
    env: dict[str, str] = {}


class PackageDistribution(Struct):
    package: NonEmpty
    args: list[str] = []
    env: dict[str, str] = {}


class Distribution(Struct):
    binary: dict[str, BinaryTarget] | None = None
    npx: PackageDistribution | None = None
    uvx: PackageDistribution | None = None

    def kinds(self) -> list[str]:
        return [kind for kind in ("npx", "uvx", "binary") if getattr(self, kind) is not None]


class AgentEntry(Struct):
    id: AgentId
    name: NonEmpty
    version: NonEmpty
    description: str
    distribution: Distribution
    repository: str | None = None
    website: str | None = None
    authors: list[str] = []
    license: str | None = None


class Registry(Struct):
    version: str
    agents: list[AgentEntry]

    def get(self, agent_id: str) -> AgentEntry | None:
        return next((agent for agent in self.agents if agent.id == agent_id), None)


def parse_registry(data: bytes) -> tuple[Registry, list[str]]:
    """The registry in `data` and the problems of the entries that were left out.

    Raises RegistryError when `data` is not a registry at all."""
    try:
        top = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise RegistryError(f"not JSON: {exc}") from None
    if not isinstance(top, dict) or not isinstance(top.get("agents"), list):
        raise RegistryError("not an ACP registry: no `agents` list")
    version = top.get("version")
    if not isinstance(version, str) or not version.startswith("1."):
        raise RegistryError(f"unsupported registry version {version!r} (this client reads 1.x)")
    agents: list[AgentEntry] = []
    problems: list[str] = []
    seen: set[str] = set()
    for index, raw in enumerate(top["agents"]):
        label = raw.get("id", f"#{index}") if isinstance(raw, dict) else f"#{index}"
        try:
            agent = msgspec.convert(raw, AgentEntry)
            _check(agent)
        except (msgspec.ValidationError, RegistryError) as exc:
            problems.append(f"agent {label!s}: {exc}")
            continue
        if agent.id in seen:
            problems.append(f"agent {agent.id}: listed twice (the first one is kept)")
            continue
        seen.add(agent.id)
        agents.append(agent)
    return Registry(version=version, agents=agents), problems


def _check(agent: AgentEntry) -> None:
    dist = agent.distribution
    if not dist.kinds():
        raise RegistryError("`distribution` has none of npx, uvx, binary")
    if dist.binary is not None:
        unknown = sorted(set(dist.binary) - set(PLATFORMS))
        if unknown:
            raise RegistryError(f"unknown binary platforms {unknown}")
        if not dist.binary:
            raise RegistryError("`distribution.binary` is empty")


def to_builtins(agent: AgentEntry) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.to_builtins(agent)
    return result
