"""Files `acpstack chat` reads: permission rules (`--permissions`) and MCP servers (`--mcp-config`).

Permission rules, JSON or TOML, in the order they are tried (the first that matches decides):

    # TOML                                   // JSON
    fallback = "ask"  # or "reject"          {"fallback": "ask", "rules": [
    [[rules]]                                  {"decision": "allow", "kinds": ["read", "search"]},
    decision = "allow"                         {"decision": "reject", "paths": ["secrets/*"]}]}
    kinds = ["read", "search"]
    [[rules]]
    decision = "reject"
    paths = ["secrets/*"]   # globs on the tool call's locations; relative ones start at --cwd

MCP servers, JSON: `{"mcpServers": {"NAME": {"command": ..., "args": [...], "env": {...}}}}`
(a stdio server) or `{"NAME": {"type": "http" | "sse", "url": ..., "headers": {...}}}`;
a list in ACP's own `session/new` form is taken as well.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any, get_args

import msgspec

from acpstack.cli._errors import EXIT_USAGE, CliError
from acpstack.client import Rule
from acpstack.schema import v1 as acp

TOOL_KINDS: tuple[str, ...] = get_args(acp.ToolKind)


def _read(path: str, what: str) -> tuple[str, str]:
    try:
        return Path(path).read_text(encoding="utf-8"), Path(path).suffix.lower()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read the {what} file {path}: {exc}", EXIT_USAGE) from None


def load_permissions(path: str, cwd: str) -> tuple[list[Rule], str | None]:
    """The rules in `path` and its `fallback` ("ask", "reject" or None when not given)."""
    text, suffix = _read(path, "permissions")
    try:
        data: Any = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if suffix == ".toml" else "JSON"
        raise CliError(f"{path} is not valid {kind}: {exc}", EXIT_USAGE) from None
    if isinstance(data, list):
        data = {"rules": data}
    if not isinstance(data, dict) or not isinstance(data.get("rules", []), list):
        raise CliError(f"{path}: expected a `rules` list", EXIT_USAGE)
    fallback = data.get("fallback")
    if fallback not in (None, "ask", "reject"):
        raise CliError(f'{path}: `fallback` is "ask" or "reject", not {fallback!r}', EXIT_USAGE)
    rules = [_rule(item, index, path, cwd) for index, item in enumerate(data.get("rules", []))]
    return rules, fallback


def _rule(item: Any, index: int, path: str, cwd: str) -> Rule:
    where = f"{path}: rule {index + 1}"
    if not isinstance(item, dict):
        raise CliError(f"{where} is not a table", EXIT_USAGE)
    unknown = set(item) - {"decision", "kinds", "paths"}
    if unknown:
        raise CliError(f"{where}: unknown keys {sorted(unknown)}", EXIT_USAGE)
    decision = item.get("decision")
    if decision not in ("allow", "reject"):
        raise CliError(f'{where}: `decision` is "allow" or "reject"', EXIT_USAGE)
    kinds = item.get("kinds", [])
    paths = item.get("paths", [])
    if not _strings(kinds) or not _strings(paths):
        raise CliError(f"{where}: `kinds` and `paths` are lists of strings", EXIT_USAGE)
    bad = sorted(set(kinds) - set(TOOL_KINDS))
    if bad:
        raise CliError(
            f"{where}: unknown tool kinds {bad} (known: {', '.join(TOOL_KINDS)})", EXIT_USAGE
        )
    absolute = [p if os.path.isabs(p) or p.startswith("*") else os.path.join(cwd, p) for p in paths]
    return Rule(decision=decision, kinds=tuple(kinds), paths=tuple(absolute))


def load_mcp_servers(path: str) -> list[acp.McpServer]:
    text, _ = _read(path, "MCP config")
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise CliError(f"{path} is not valid JSON: {exc}", EXIT_USAGE) from None
    if isinstance(data, dict) and "mcpServers" in data:
        data = data["mcpServers"]
    try:
        if isinstance(data, list):  # ACP's own form
            return msgspec.convert(data, list[acp.McpServer])
        if isinstance(data, dict):
            return [_server(name, spec) for name, spec in data.items()]
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise CliError(f"{path}: {exc}", EXIT_USAGE) from None
    raise CliError(f'{path}: expected {{"mcpServers": {{NAME: {{...}}}}}}', EXIT_USAGE)


def _server(name: str, spec: Any) -> acp.McpServer:
    if not isinstance(spec, dict):
        raise ValueError(f"server {name!r} is not an object")
    kind = spec.get("type", "stdio")
    if kind in ("http", "sse"):
        headers = [acp.HttpHeader(name=k, value=str(v)) for k, v in spec.get("headers", {}).items()]
        cls = acp.McpServerHttp if kind == "http" else acp.McpServerSse
        if not isinstance(spec.get("url"), str):
            raise ValueError(f"server {name!r} needs a `url`")
        return cls(name=name, url=spec["url"], headers=headers)
    if kind != "stdio" or not isinstance(spec.get("command"), str):
        raise ValueError(f"server {name!r} needs a `command` (or `type` http/sse and a `url`)")
    args = spec.get("args", [])
    if not _strings(args):
        raise ValueError(f"server {name!r}: `args` is a list of strings")
    env = [acp.EnvVariable(name=k, value=str(v)) for k, v in spec.get("env", {}).items()]
    command = spec["command"]  # ACP wants an absolute path: look a bare name up on PATH
    if not os.path.isabs(command):
        command = shutil.which(command) or command
    return acp.McpServerStdio(name=name, command=command, args=list(args), env=env)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
