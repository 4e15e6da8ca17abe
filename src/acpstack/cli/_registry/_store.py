"""Which copy of the registry the command uses, and how `acpstack agents --update` refreshes it.

A snapshot ships in the package (`registry.json` next to this file: the published registry
of 2026-08-18, 39 agents, byte-identical to the public copy at
shenkonghui/dsh-llm-acp@a0f24f0af0dda68365c2d7d9d71733be3b8a35bd:lib/types/registry.json; it
predates the `extensions` key, read as none). No newer public copy was at hand when this
was last checked (2026-11-28: the newest clone of the registry repository at hand ends at
3de1678346d1b37b6c3f07de503043ebcbb9cbdb of 2026-02-07, with 11 agents; the repository keeps
no built registry.json, only one agent.json per agent, and the later single files seen were
not one consistent tree; its probe results of 2026-08-20 show a few newer versions, such as
claude-acp 0.70.0 and codex-acp 1.6.0; other public copies found were this one or fragments),
so the snapshot stays as it is until a whole newer one is. `--update` fetches the
published registry and keeps it in the user cache; from then on that copy is used. When the
fetch fails (offline, an error, not a registry), nothing is replaced.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import msgspec

from acpstack.cli._registry._model import Registry, RegistryError, parse_registry

DEFAULT_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
#: The registry's address; tests (and mirrors) point it elsewhere.
URL_VARIABLE = "ACPSTACK_REGISTRY_URL"
FETCH_TIMEOUT = 15.0
MAX_REGISTRY_BYTES = 16 * 1024 * 1024
CACHED_NAME = "registry.json"
META_NAME = "registry.meta.json"


@dataclass
class LoadedRegistry:
    registry: Registry
    source: str  # "snapshot" (shipped in the package) or the fetched copy's path
    fetched_at: float | None = None  # when the fetched copy was fetched
    url: str | None = None
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.fetched_at is None:
            return "the registry snapshot shipped with acpstack"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.fetched_at))
        return f"the registry fetched {when} from {self.url}"


def registry_url() -> str:
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


def load_snapshot() -> LoadedRegistry:
    data = resources.files(__package__).joinpath("registry.json").read_bytes()
    registry, problems = parse_registry(data)
    return LoadedRegistry(registry, "snapshot", problems=problems)


def load_registry(cache: Path | None) -> LoadedRegistry:
    """The fetched copy in `cache` when there is a usable one, else the shipped snapshot."""
    if cache is not None:
        with contextlib.suppress(OSError, RegistryError, msgspec.DecodeError):
            data = (cache / CACHED_NAME).read_bytes()
            meta = msgspec.json.decode((cache / META_NAME).read_bytes())
            registry, problems = parse_registry(data)
            return LoadedRegistry(
                registry,
                str(cache / CACHED_NAME),
                fetched_at=float(meta.get("fetchedAt", 0)),
                url=str(meta.get("url", "")),
                problems=problems,
            )
    return load_snapshot()


def fetch_registry(url: str, *, timeout: float = FETCH_TIMEOUT) -> bytes:
    """The registry's bytes at `url`; RegistryError (with the reason) when it cannot be had."""
    request = urllib.request.Request(url, headers={"User-Agent": "acpstack"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data: bytes = response.read(MAX_REGISTRY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise RegistryError(f"{url} answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RegistryError(f"cannot reach {url}: {reason}") from None
    if len(data) > MAX_REGISTRY_BYTES:
        raise RegistryError(f"{url} sent more than {MAX_REGISTRY_BYTES} bytes")
    return data


def update_registry(cache: Path, url: str, *, timeout: float = FETCH_TIMEOUT) -> LoadedRegistry:
    """Fetch the registry and keep it in `cache`; the previous copy stays when anything fails."""
    data = fetch_registry(url, timeout=timeout)
    try:
        registry, problems = parse_registry(data)
    except RegistryError as exc:
        raise RegistryError(f"{url} did not send a usable registry: {exc}") from None
    if not registry.agents:
        raise RegistryError(f"{url} sent a registry without a usable agent")
    now = time.time()
    _write_atomic(cache / CACHED_NAME, data)
    _write_atomic(cache / META_NAME, msgspec.json.encode({"fetchedAt": now, "url": url}))
    return LoadedRegistry(
        registry, str(cache / CACHED_NAME), fetched_at=now, url=url, problems=problems
    )


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
