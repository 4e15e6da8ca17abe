"""Accept known seed-document spellings on input (ACP-INVENTORY §5, "ALIAS").

Each function takes the plain JSON params/result of one method and returns it in the
official form. What we send is always the official form; these only widen what we read.
Every rewrite is logged at debug level so a peer's non-standard output can be found.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Callable
from typing import Any

log = logging.getLogger("acpstack.aliases")

Json = dict[str, Any]


def _rename(obj: Json, old: str, new: str, where: str) -> None:
    if old in obj and new not in obj:
        obj[new] = obj.pop(old)
        log.debug("%s: accepted seed field %r as %r", where, old, new)


def _env_list(value: Any) -> Any:
    """Seed documents send env/headers as maps; ACP uses [{name, value}] lists."""
    if isinstance(value, dict):
        return [{"name": str(k), "value": str(v)} for k, v in value.items()]
    return value


def protocol_version(value: Any) -> Any:
    """Digit strings become ints; other strings mean "a version we do not speak" (0)."""
    if isinstance(value, str):
        log.debug("protocolVersion sent as string %r", value)
        return int(value) if value.isdigit() else 0
    return value


def _client_capabilities(caps: Any) -> Any:
    if not isinstance(caps, dict):
        return caps
    caps = dict(caps)
    fs = caps.get("fs")
    if isinstance(fs, dict):
        fs = dict(fs)
        _rename(fs, "read", "readTextFile", "clientCapabilities.fs")
        _rename(fs, "write", "writeTextFile", "clientCapabilities.fs")
        fs.pop("watch", None)
        caps["fs"] = fs
    terminal = caps.get("terminal")
    if isinstance(terminal, dict):
        caps["terminal"] = bool(terminal.get("create"))
        log.debug("clientCapabilities.terminal sent as object")
    return caps


def _agent_capabilities(caps: Any) -> Any:
    if not isinstance(caps, dict):
        return caps
    caps = dict(caps)
    mcp = caps.get("mcpCapabilities")
    if isinstance(mcp, dict) and isinstance(mcp.get("transport"), list):
        transports = mcp["transport"]
        caps["mcpCapabilities"] = {"http": "http" in transports, "sse": "sse" in transports}
        log.debug("mcpCapabilities.transport list accepted")
    return caps


def initialize_params(p: Json) -> Json:
    _rename(p, "capabilities", "clientCapabilities", "initialize")
    if "protocolVersion" in p:
        p["protocolVersion"] = protocol_version(p["protocolVersion"])
    if "clientCapabilities" in p:
        p["clientCapabilities"] = _client_capabilities(p["clientCapabilities"])
    return p


def initialize_result(r: Json) -> Json:
    _rename(r, "capabilities", "agentCapabilities", "initialize result")
    if "protocolVersion" in r:
        r["protocolVersion"] = protocol_version(r["protocolVersion"])
    if "agentCapabilities" in r:
        r["agentCapabilities"] = _agent_capabilities(r["agentCapabilities"])
    return r


def authenticate_params(p: Json) -> Json:
    _rename(p, "method", "methodId", "authenticate")
    p.pop("credentials", None)  # never logged, never kept
    return p


def _mcp_server(server: Any) -> Any:
    if not isinstance(server, dict):
        return server
    server = dict(server)
    transport = server.pop("transport", None)
    if isinstance(transport, dict):
        log.debug("MCP server with nested seed `transport` flattened")
        kind = transport.get("type", "stdio")
        for key in ("command", "args", "env", "url", "headers"):
            if key in transport:
                server.setdefault(key, transport[key])
        if kind != "stdio":
            server["type"] = kind
    if server.get("type") in (None, "stdio"):
        server.pop("type", None)
        server.setdefault("args", [])
        server.setdefault("env", [])
        server["env"] = _env_list(server["env"])
    else:
        server.setdefault("headers", [])
        server["headers"] = _env_list(server["headers"])
    return server


def _session_setup(p: Json, method: str) -> Json:
    _rename(p, "workingDirectory", "cwd", method)
    if method in ("session/new", "session/load"):
        p.setdefault("mcpServers", [])
    if isinstance(p.get("mcpServers"), list):
        p["mcpServers"] = [_mcp_server(s) for s in p["mcpServers"]]
    return p


def _content_block(block: Any) -> Any:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if isinstance(block, dict) and block.get("type") == "resource_link" and "name" not in block:
        uri = str(block.get("uri", ""))
        block = dict(block, name=block.get("title") or posixpath.basename(uri.rstrip("/")) or uri)
        log.debug("resource_link without name: defaulted")
    return block


def prompt_params(p: Json) -> Json:
    _rename(p, "content", "prompt", "session/prompt")
    prompt = p.get("prompt")
    if isinstance(prompt, str):
        p["prompt"] = [{"type": "text", "text": prompt}]
        log.debug("session/prompt: plain-string prompt wrapped in a text block")
    elif isinstance(prompt, list):
        p["prompt"] = [_content_block(b) for b in prompt]
    return p


def set_mode_params(p: Json) -> Json:
    _rename(p, "mode", "modeId", "session/set_mode")
    return p


def set_config_option_params(p: Json) -> Json:
    _rename(p, "key", "configId", "session/set_config_option")
    if isinstance(p.get("value"), bool) and "type" not in p:
        p["type"] = "boolean"
    return p


_UPDATE_NAMES = {
    "thought_message_chunk": "agent_thought_chunk",
    "available_commands": "available_commands_update",
    "agent-text": "agent_message_chunk",
}


def session_update_params(p: Json) -> Json:
    update = p.get("update")
    if update is None and ("type" in p or "kind" in p):
        # Seed 002/004 envelopes: {sessionId, type, data} or {sessionId, kind, content}.
        kind = p.pop("type", None) or p.pop("kind", None)
        data = p.pop("data", None)
        update = dict(data) if isinstance(data, dict) else {}
        if "content" in p and "content" not in update:
            update["content"] = p.pop("content")
        update["sessionUpdate"] = kind
        log.debug("session/update: seed envelope accepted")
    if isinstance(update, dict):
        update = dict(update)
        name = update.get("sessionUpdate")
        if name in _UPDATE_NAMES:
            update["sessionUpdate"] = _UPDATE_NAMES[name]
        if name in ("current_mode_update",):
            _rename(update, "currentMode", "currentModeId", "current_mode_update")
        if "content" in update and str(update.get("sessionUpdate", "")).endswith("_chunk"):
            update["content"] = _content_block(update["content"])
        p["update"] = update
    return p


def read_text_file_params(p: Json) -> Json:
    if "startLine" in p and "line" not in p:
        start = p.pop("startLine")
        p["line"] = start
        end = p.pop("endLine", None)
        if isinstance(start, int) and isinstance(end, int) and end >= start:
            p["limit"] = end - start + 1
        log.debug("fs/read_text_file: startLine/endLine accepted")
    return p


def create_terminal_params(p: Json) -> Json:
    if "env" in p:
        p["env"] = _env_list(p["env"])
    return p


PARAMS: dict[str, Callable[[Json], Json]] = {
    "initialize": initialize_params,
    "authenticate": authenticate_params,
    "session/new": lambda p: _session_setup(p, "session/new"),
    "session/load": lambda p: _session_setup(p, "session/load"),
    "session/resume": lambda p: _session_setup(p, "session/resume"),
    "session/fork": lambda p: _session_setup(p, "session/fork"),
    "session/prompt": prompt_params,
    "session/set_mode": set_mode_params,
    "session/set_config_option": set_config_option_params,
    "session/update": session_update_params,
    "fs/read_text_file": read_text_file_params,
    "terminal/create": create_terminal_params,
}

RESULTS: dict[str, Callable[[Json], Json]] = {
    "initialize": initialize_result,
}

# Methods whose seed spellings still decode "successfully" under the strict schema
# (the seed field is ignored as unknown), so they are normalised before decoding.
ALWAYS_NORMALIZE = frozenset(
    {
        "initialize",
        "authenticate",
        "session/new",
        "session/load",
        "session/resume",
        "session/set_mode",
        "session/set_config_option",
        "fs/read_text_file",
        "terminal/create",
    }
)


# For the methods called often, the seed spellings a strict decode would silently ignore
# can be recognised in the raw bytes: without any of these, the strict fast path is safe.
# (Seed spellings that make a strict decode fail reach normalisation anyway.)
SEED_MARKERS: dict[str, tuple[bytes, ...]] = {
    "session/new": (b'"workingDirectory"', b'"transport"'),
    "session/load": (b'"workingDirectory"', b'"transport"'),
    "session/resume": (b'"workingDirectory"', b'"transport"'),
    "fs/read_text_file": (b'"startLine"',),
}
# One search per message instead of one per marker (searched on the raw bytes, no copy).
_MARKER_RE = {
    method: re.compile(b"|".join(re.escape(m) for m in markers))
    for method, markers in SEED_MARKERS.items()
}


def needs_normalizing(method: str, raw: Any) -> bool:
    """Whether params of `method` (raw JSON) must be normalised before a strict decode."""
    if method not in ALWAYS_NORMALIZE:
        return False
    pattern = _MARKER_RE.get(method)
    if pattern is None:
        return True
    return pattern.search(raw) is not None


def seed_markers(method: str) -> tuple[bytes, ...] | None:
    """What to look for in a message of `method` before trusting a strict decode of it:
    () for nothing (no seed spelling it would ignore), else byte strings any of which
    means "normalise first"; None when it is always normalised."""
    if method not in ALWAYS_NORMALIZE:
        return ()
    return SEED_MARKERS.get(method)


def normalize_params(method: str, params: Any) -> Any:
    """The params of `method` (plain JSON) in the official form: known seed spellings
    rewritten, anything else returned as it is."""
    fix = PARAMS.get(method)
    if fix is None or not isinstance(params, dict):
        return params
    return fix(dict(params))


def normalize_result(method: str, result: Any) -> Any:
    """The result of `method` (plain JSON) in the official form, as `normalize_params`."""
    fix = RESULTS.get(method)
    if fix is None or not isinstance(result, dict):
        return result
    return fix(dict(result))
