"""The ACP agent registry's format (`registry.json`, schema version 1.x), parsed with msgspec.

The file is `{version, agents, extensions}`: `agents` and `extensions` hold entries of one
shape (id, name, version, description and a `distribution` with at least one of `npx` /
`uvx`, a package and its arguments, or `binary`, an archive per platform, the command inside
it, an optional sha256). Older files have no `extensions` (read as none). Unknown fields are
ignored (the format grows); an entry that breaks the schema is left out and reported, never
the whole file.
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
    license_url: str | None = None
    icon: str | None = None

    def matches(self, word: str) -> bool:
        """Whether `word` (any case) is in the id, name, description or a package name."""
        word = word.casefold()
        dist = self.distribution
        packages = [p.package for p in (dist.npx, dist.uvx) if p is not None]
        texts = [self.id, self.name, self.description, *packages]
        return any(word in text.casefold() for text in texts)


class Registry(Struct):
    version: str
    agents: list[AgentEntry]
    extensions: list[AgentEntry] = []  # same shape as agents; not started by `chat`

    def get(self, agent_id: str) -> AgentEntry | None:
        return next((agent for agent in self.agents if agent.id == agent_id), None)

    def search(self, word: str) -> list[AgentEntry]:
        return [agent for agent in self.agents if agent.matches(word)]


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
    extensions = top.get("extensions", [])  # absent in files older than the key
    if not isinstance(extensions, list):
        raise RegistryError("not an ACP registry: `extensions` is not a list")
    problems: list[str] = []
    agents = _entries(top["agents"], "agent", problems)
    return Registry(version, agents, _entries(extensions, "extension", problems)), problems


def _entries(raws: list[Any], kind: str, problems: list[str]) -> list[AgentEntry]:
    entries: list[AgentEntry] = []
    seen: set[str] = set()
    for index, raw in enumerate(raws):
        label = raw.get("id", f"#{index}") if isinstance(raw, dict) else f"#{index}"
        try:
            entry = msgspec.convert(raw, AgentEntry)
            _check(entry)
        except (msgspec.ValidationError, RegistryError) as exc:
            problems.append(f"{kind} {label!s}: {exc}")
            continue
        if entry.id in seen:
            problems.append(f"{kind} {entry.id}: listed twice (the first one is kept)")
            continue
        seen.add(entry.id)
        entries.append(entry)
    return entries


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
