"""`acpstack agents`: the agents you can start by name (profiles from the config file, then
the ACP registry), one agent's details, and `--update` to refresh the registry."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

from acpstack.cli._args import Formatter
from acpstack.cli._errors import EXIT_ERROR, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from acpstack.cli._config import Config
    from acpstack.cli._registry import LoadedRegistry

DESCRIPTION = """\
The agents `acpstack chat NAME` and `acpstack serve NAME` start: your profiles (from the
config file) and the ACP registry's agents. A snapshot of the registry ships with
acpstack; --update fetches the current one (from $ACPSTACK_REGISTRY_URL when set) and
keeps it in the user cache. Offline, the copy you have stays in use."""


def add_parser(sub: Any) -> None:
    agents = sub.add_parser(
        "agents",
        help="list the agents you can start by name (--update refreshes the registry)",
        description=DESCRIPTION,
        formatter_class=Formatter,
    )
    agents.add_argument("agent", nargs="?", metavar="AGENT", help="show this agent's details")
    agents.add_argument("--update", action="store_true", help="fetch the current registry first")
    agents.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    agents.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from acpstack.cli._config import load_config
    from acpstack.cli._paths import cache_dir, config_file
    from acpstack.cli._registry import RegistryError, load_registry, registry_url, update_registry

    config = load_config(config_file())
    code = 0
    if args.update:
        cache = cache_dir()  # updating needs it: a clear error when it cannot be used
        try:
            loaded = update_registry(cache, registry_url())
            sys.stderr.write(f"updated: {len(loaded.registry.agents)} agents from {loaded.url}\n")
        except RegistryError as exc:
            loaded = load_registry(cache)
            sys.stderr.write(f"could not update the registry: {exc}; using {loaded.describe()}\n")
            code = EXIT_ERROR
    else:
        try:
            loaded = load_registry(cache_dir())
        except CliError:
            loaded = load_registry(None)
    for problem in loaded.problems:
        sys.stderr.write(f"registry: left out {problem}\n")
    if args.agent:
        _show(args.agent, config, loaded, args.format)
    else:
        _list(config, loaded, args.format)
    return code


def _list(config: Config, loaded: LoadedRegistry, output: str) -> None:
    agents = loaded.registry.agents
    if output == "json":
        from acpstack.cli._registry._model import to_builtins

        data = {
            "source": loaded.describe(),
            "profiles": {name: vars(p) for name, p in config.profiles.items()},
            "agents": [to_builtins(agent) for agent in agents],
        }
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        return
    rows = [
        (p.name, "", "profile", p.description or " ".join(p.command or []))
        for p in config.profiles.values()
    ]
    rows += [
        (a.id, a.version, "/".join(a.distribution.kinds()), f"{a.name}: {a.description}")
        for a in agents
        if a.id not in config.profiles
    ]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(3)]
    for row in rows:
        fixed = "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        sys.stdout.write(f"{fixed}  {row[3]}\n")
    sys.stderr.write(
        f"{len(config.profiles)} profiles, {len(agents)} registry agents ({loaded.describe()}); "
        "start one with `acpstack chat ID`\n"
    )


def _show(name: str, config: Config, loaded: LoadedRegistry, output: str) -> None:
    from acpstack.cli._paths import cache_dir
    from acpstack.cli._registry import RegistryError, UnknownAgent, resolve

    entry = loaded.registry.get(name)
    try:
        launch = resolve(name, config, loaded.registry, lambda: cache_dir("agents"))
        runs = shlex.join(launch.command)
        how = launch.how
    except UnknownAgent as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    except RegistryError as exc:
        runs, how = f"(cannot run here: {exc})", "-"
    if output == "json":
        from acpstack.cli._registry._model import to_builtins

        data = {
            "id": name,
            "runs": runs,
            "how": how,
            "entry": to_builtins(entry) if entry else None,
        }
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        return
    lines = [f"id: {name}"]
    if entry is not None:
        lines += [
            f"name: {entry.name}",
            f"version: {entry.version}",
            f"description: {entry.description}",
            f"license: {entry.license or '-'}",
            f"repository: {entry.repository or entry.website or '-'}",
            f"distributions: {', '.join(entry.distribution.kinds())}",
        ]
    if name in config.profiles:
        lines.append(f"profile: from {config.path}")
    lines += [f"starts with ({how}): {runs}"]
    sys.stdout.write("\n".join(lines) + "\n")
