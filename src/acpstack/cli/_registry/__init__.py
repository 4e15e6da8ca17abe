"""The ACP agent registry: the shipped snapshot, `--update`, and launching agents by id."""

from acpstack.cli._registry._binary import platform_key
from acpstack.cli._registry._launch import AgentLaunch, from_entry, resolve
from acpstack.cli._registry._model import (
    AgentEntry,
    BinaryTarget,
    Registry,
    RegistryError,
    UnknownAgent,
    parse_registry,
)
from acpstack.cli._registry._store import (
    DEFAULT_URL,
    URL_VARIABLE,
    LoadedRegistry,
    load_registry,
    load_snapshot,
    registry_url,
    update_registry,
)

__all__ = [
    "DEFAULT_URL",
    "URL_VARIABLE",
    "AgentEntry",
    "AgentLaunch",
    "BinaryTarget",
    "LoadedRegistry",
    "Registry",
    "RegistryError",
    "UnknownAgent",
    "from_entry",
    "load_registry",
    "load_snapshot",
    "parse_registry",
    "platform_key",
    "registry_url",
    "resolve",
    "update_registry",
]
