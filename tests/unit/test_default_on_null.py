"""`x-deserialize-default-on-null`: a `null` in such a field reads as its empty value.

The schema of November 2026 marks some arrays and maps (`mcpServers`, `args`, `env`,
`headers`, `additionalDirectories`) this way: a peer that sends `null` there means
"none", and the official SDKs decode it as an empty value. The fields are read from the
vendored schema itself, so a field the generator missed fails here by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acpstack.schema import v1, v1_unstable, v2, v2_unstable
from acpstack.wire._decode import decode_typed  # the decode every inbound message takes

SCHEMA = Path(__file__).resolve().parents[2] / "vendor" / "acp-schema"
MODULES = {
    "v1/schema.json": v1,
    "v1/schema.unstable.json": v1_unstable,
    "v2/schema.json": v2,
    "v2/schema.unstable.json": v2_unstable,
}


def marked_fields() -> list[tuple[str, str, str]]:
    fields = []
    for file in MODULES:
        defs = json.loads((SCHEMA / file).read_text())["$defs"]
        for name, definition in sorted(defs.items()):
            for prop, spec in sorted(definition.get("properties", {}).items()):
                if spec.get("x-deserialize-default-on-null"):
                    fields.append((file, name, prop))
    return fields


def test_the_schema_marks_fields() -> None:
    assert len(marked_fields()) >= 40  # 14 + 16 + 10 + 12 in the vendored copy


@pytest.mark.parametrize(("file", "name", "prop"), marked_fields())
def test_null_reads_as_the_empty_value(file: str, name: str, prop: str) -> None:
    cls = getattr(MODULES[file], name)
    lenient = vars(cls).get("__acp_lenient__") or getattr(cls, "__acp_lenient__", {})
    attr = next(f.name for f in msgspec.structs.fields(cls) if f.encode_name == prop)
    assert lenient.get(attr, (False, False, False))[2], f"{name}.{prop} is not marked"
    spec = json.loads((SCHEMA / file).read_text())["$defs"][name]["properties"][prop]
    empty: Any = {} if spec.get("type") == "object" else []
    value = minimal(cls)
    value[prop] = None
    decoded = decode_typed(msgspec.json.encode(value), cls, "x")
    assert getattr(decoded, attr) == empty


def minimal(cls: type) -> dict[str, Any]:
    """The smallest valid object of `cls`: its required fields with plain values."""
    samples: dict[str, Any] = {
        "cwd": "/tmp",
        "sessionId": "s",
        "command": "true",
        "name": "n",
        "url": "http://127.0.0.1/",
        "id": "i",
        "methodId": "m",
        "type": "terminal",
        "mcpServers": [],
        "args": [],
        "env": [],
        "headers": [],
    }
    out = {}
    for field in msgspec.structs.fields(cls):
        if field.required:
            out[field.encode_name] = samples[field.encode_name]
    return out


def test_a_stdio_mcp_server_with_null_args_and_env_in_session_new() -> None:
    # The untagged arm of `McpServer` (stdio has no "type") inside a list.
    raw = b'{"cwd":"/tmp","mcpServers":[{"name":"x","command":"srv","args":null,"env":null}]}'
    request = decode_typed(raw, v1.NewSessionRequest, "session/new")
    (server,) = request.mcp_servers
    assert isinstance(server, v1.McpServerStdio)
    assert (server.args, server.env) == ([], [])


def test_null_elsewhere_is_still_refused() -> None:
    with pytest.raises(Exception, match="Invalid params"):
        decode_typed(b'{"cwd":null,"mcpServers":[]}', v1.NewSessionRequest, "session/new")
