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
    from acpstack.cli._config import Config, Profile
    from acpstack.cli._registry import AgentEntry, LoadedRegistry

DESCRIPTION = """\
The agents `acpstack chat NAME` and `acpstack serve NAME` start: your profiles (from the
config file) and the ACP registry's agents. `acpstack agents search WORD` lists those whose
id, name, description or package mentions WORD. A snapshot of the registry ships with
acpstack; --update fetches the current one (from $ACPSTACK_REGISTRY_URL when set: a mirror,
or a file:// URL of a registry.json you downloaded) and keeps it in the user cache.
Offline, the copy you have stays in use, and --update says what it could not reach."""


def add_parser(sub: Any) -> None:
    agents = sub.add_parser(
        "agents",
        help="list the agents you can start by name (--update refreshes the registry)",
        description=DESCRIPTION,
        formatter_class=Formatter,
    )
    agents.add_argument(
        "agent", nargs="?", metavar="AGENT", help="show this agent's details (or: search WORD)"
    )
    agents.add_argument(
        "word", nargs="?", metavar="WORD", help="with `search`: list the agents that mention WORD"
    )
    agents.add_argument("--update", action="store_true", help="fetch the current registry first")
    agents.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    agents.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from acpstack.cli._config import load_config
    from acpstack.cli._paths import cache_dir, config_file
    from acpstack.cli._registry import (
        URL_VARIABLE,
        RegistryError,
        load_registry,
        registry_url,
        update_registry,
    )

    config = load_config(config_file())
    code = 0
    if args.update:
        cache = cache_dir()  # updating needs it: a clear error when it cannot be used
        try:
            loaded = update_registry(cache, registry_url())
            sys.stderr.write(f"updated: {len(loaded.registry.agents)} agents from {loaded.url}\n")
        except RegistryError as exc:
            loaded = load_registry(cache)
            sys.stderr.write(
                f"could not update the registry: {exc}\n"
                f"--update needs a GET of {registry_url()} from this machine; offline, "
                f"set {URL_VARIABLE} to a mirror or to file:///PATH/registry.json of a copy "
                f"fetched elsewhere. Using {loaded.describe()}.\n"
            )
            code = EXIT_ERROR
    else:
        try:
            loaded = load_registry(cache_dir())
        except CliError:
            loaded = load_registry(None)
    for problem in loaded.problems:
        sys.stderr.write(f"registry: left out {problem}\n")
    if args.agent == "search":
        return _search(args.word, config, loaded, args.format) or code
    if args.word is not None:
        raise CliError(f"unexpected {args.word!r}: give one AGENT, or `search WORD`", EXIT_USAGE)
    if args.agent:
        _show(args.agent, config, loaded, args.format)
    else:
        _list(config, loaded, args.format)
    return code


def _search(word: str | None, config: Config, loaded: LoadedRegistry, output: str) -> int:
    if not word:
        raise CliError("acpstack agents search WORD: give the word to look for", EXIT_USAGE)
    folded = word.casefold()
    profiles = {
        name: profile
        for name, profile in config.profiles.items()
        if folded
        in " ".join([name, profile.description or "", *(profile.command or [])]).casefold()
    }
    found = loaded.registry.search(word)
    if not found and not profiles:
        sys.stderr.write(
            f"no agent mentions {word!r} in {loaded.describe()} "
            f"({len(loaded.registry.agents)} agents; `acpstack agents` lists them all)\n"
        )
        return EXIT_ERROR
    _list(config, loaded, output, agents=found, profiles=profiles)
    if output == "text":
        sys.stderr.write(f"matching {word!r}\n")
    return 0


def _list(
    config: Config,
    loaded: LoadedRegistry,
    output: str,
    *,
    agents: list[AgentEntry] | None = None,
    profiles: dict[str, Profile] | None = None,
) -> None:
    if agents is None:
        agents = loaded.registry.agents
    if profiles is None:
        profiles = config.profiles
    if output == "json":
        from acpstack.cli._registry._model import to_builtins

        data = {
            "source": loaded.describe(),
            "profiles": {name: vars(p) for name, p in profiles.items()},
            "agents": [to_builtins(agent) for agent in agents],
            "extensions": [to_builtins(ext) for ext in loaded.registry.extensions],
        }
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        return
    rows = [
        (p.name, "", "profile", p.description or " ".join(p.command or []))
        for p in profiles.values()
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
    extensions = len(loaded.registry.extensions)
    sys.stderr.write(
        f"{len(profiles)} profiles, {len(agents)} registry agents"
        + (f" and {extensions} extensions" if extensions else "")
        + f" ({loaded.describe()}); start one with `acpstack chat ID`\n"
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
