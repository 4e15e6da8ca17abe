"""Random JSON values that follow the official schema (the seeds the fuzzer mutates).

Handles what the ACP schema uses: $ref, allOf, anyOf/oneOf, const, enum, type lists,
integer formats and bounds, arrays, objects with properties and free-form maps. The
values are plausible, not always valid (a `oneOf` may match two arms): the mutations
that follow care more about shape than about perfect validity.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "vendor" / "acp-schema" / "v1" / "schema.unstable.json"
MAX_DEPTH = 5
WORDS = [
    "hello",
    "/help",
    "/plan",
    "/read README.md",
    "/run ls",
    "/edit README.md a b",
    "fix the tests",
    "",
    "é漢🙂",
    "a\u2028b",
]


class SchemaValues:
    """Draws random values for the schema's `$defs`.

    `hints` maps a field name to (probability, value or callable): the value is used with
    that probability instead of a random one (1.0 pins a field, e.g. keeps `mcpServers`
    empty so that no fuzzed input ever makes the target start a process)."""

    def __init__(self, rng: random.Random, hints: dict[str, Any] | None = None) -> None:
        self.rng = rng
        self.defs: dict[str, Any] = json.loads(SCHEMA.read_text())["$defs"]
        self.hints = hints or {}

    def for_def(self, name: str) -> Any:
        return self.value(self.defs[name], 0, None)

    def has(self, name: str) -> bool:
        return name in self.defs

    def deref(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            target = self.defs[schema["$ref"].rsplit("/", 1)[1]]
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def value(self, schema: Any, depth: int, field: str | None) -> Any:
        if field is not None and field in self.hints:
            chance, hint = self.hints[field]
            if self.rng.random() < chance:
                return hint() if callable(hint) else hint
        if schema is True or schema == {}:
            return self.free(depth)
        schema = self.deref(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        if "allOf" in schema:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged = _merge(merged, self.deref(part))
            return self.value(merged, depth, field)
        arms = schema.get("oneOf") or schema.get("anyOf")
        if arms:
            base = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "discriminator")}
            arm = self.deref(self.rng.choice(arms))
            return self.value(_merge(base, arm) if "properties" in base else arm, depth + 1, field)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.rng.choice(kind)
        return self.typed(kind, schema, depth, field)

    def typed(self, kind: Any, schema: dict[str, Any], depth: int, field: str | None) -> Any:
        rng = self.rng
        if kind == "null":
            return None
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "string":
            return rng.choice(WORDS) if field in ("text", "name", "title") else self.string()
        if kind == "integer":
            lo = schema.get("minimum", 0 if "uint" in schema.get("format", "") else -1000)
            hi = schema.get("maximum", 100_000)
            return rng.randint(int(lo), int(max(lo, hi)))
        if kind == "number":
            return rng.uniform(-1e6, 1e6)
        if kind == "array":
            count = 0 if depth >= MAX_DEPTH else rng.randint(0, 3)
            return [self.value(schema.get("items", True), depth + 1, None) for _ in range(count)]
        if kind == "object" or "properties" in schema:
            return self.object(schema, depth)
        return self.free(depth)

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or (depth < MAX_DEPTH and self.rng.random() < 0.4):
                out[name] = self.value(sub, depth + 1, name)
        if not props and depth < MAX_DEPTH and self.rng.random() < 0.3:
            out[self.string()] = self.free(depth + 1)
        return out

    def string(self) -> str:
        rng = self.rng
        choice = rng.random()
        if choice < 0.5:
            return "".join(rng.choice("abcdefxyz-_/.") for _ in range(rng.randint(0, 12)))
        if choice < 0.8:
            return rng.choice(WORDS)
        return "".join(
            chr(
                rng.choice(
                    [
                        rng.randint(0x20, 0x7E),
                        rng.randint(0xA0, 0x2FFF),
                        rng.randint(0x1F300, 0x1F64F),
                    ]
                )
            )
            for _ in range(rng.randint(1, 8))
        )

    def free(self, depth: int) -> Any:
        rng = self.rng
        pick = rng.randint(0, 6 if depth < MAX_DEPTH else 4)
        if pick == 0:
            return None
        if pick == 1:
            return rng.random() < 0.5
        if pick == 2:
            return rng.randint(-(2**40), 2**40)
        if pick == 3:
            return self.string()
        if pick == 4:
            return rng.uniform(-1e9, 1e9)
        if pick == 5:
            return [self.free(depth + 1) for _ in range(rng.randint(0, 3))]
        return {self.string(): self.free(depth + 1) for _ in range(rng.randint(0, 3))}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = {**a, **{k: v for k, v in b.items() if k not in ("properties", "required")}}
    out["properties"] = {**a.get("properties", {}), **b.get("properties", {})}
    out["required"] = sorted(set(a.get("required", ())) | set(b.get("required", ())))
    return out
