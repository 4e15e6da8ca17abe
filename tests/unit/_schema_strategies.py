"""Hypothesis strategies built from the official JSON Schema itself (no hand-written shapes).

Covers what the ACP schema uses: $ref, allOf, anyOf/oneOf (with sibling properties, as
in flattened unions), const, enum, type lists with null, integer formats, minimum/maximum,
arrays, objects with properties and free-form maps. Documents that a `oneOf` or `not`
makes invalid are filtered by the caller with the schema validator.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
    "uint16": (0, 2**16 - 1),
}
MAX_DEPTH = 4
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), TEXT)
FREE_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


class SchemaStrategies:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = root["$defs"]

    def for_def(self, name: str) -> st.SearchStrategy[Any]:
        return self.build(self.defs[name], 0)

    def deref(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Follow a $ref (or an allOf holding one $ref) to its target, merged with siblings."""
        while True:
            if "$ref" in schema:
                target = self.defs[schema["$ref"].rsplit("/", 1)[1]]
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {**target, **_structural(rest)}
            elif (
                "allOf" in schema
                and len(schema["allOf"]) == 1
                and not _structural({k: v for k, v in schema.items() if k != "allOf"})
            ):
                schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
            else:
                return schema

    def build(self, schema: dict[str, Any] | bool, depth: int) -> st.SearchStrategy[Any]:
        if schema is True or schema == {}:
            return FREE_JSON
        assert isinstance(schema, dict)
        schema = self.deref(schema)
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if "allOf" in schema:
            merged = dict(schema)
            parts = merged.pop("allOf")
            for part in parts:
                merged = _merge(merged, self.deref(part))
            return self.build(merged, depth)
        arms = schema.get("anyOf") or schema.get("oneOf")
        if arms:
            base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "discriminator")}
            choices = [
                self.build(_merge(base, self.deref(arm)) if _structural(base) else arm, depth + 1)
                for arm in arms
            ]
            return st.one_of(*choices)
        kind = schema.get("type")
        if isinstance(kind, list):
            return st.one_of(*(self.build({**schema, "type": k}, depth) for k in kind))
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "string":
            return TEXT
        if kind == "integer":
            lo, hi = INT_RANGES.get(schema.get("format", ""), (-(2**53), 2**53))
            lo = max(lo, schema.get("minimum", lo))
            hi = min(hi, schema.get("maximum", hi))
            return st.integers(lo, hi)
        if kind == "number":
            return st.floats(allow_nan=False, allow_infinity=False, width=64)
        if kind == "array":
            items = schema.get("items", True)
            return st.lists(self.build(items, depth + 1), max_size=0 if depth >= MAX_DEPTH else 3)
        if kind == "object" or "properties" in schema:
            return self.object(schema, depth)
        return FREE_JSON

    def object(self, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        props: dict[str, Any] = schema.get("properties", {})
        if not props:
            extra = schema.get("additionalProperties", True)
            values = FREE_JSON if extra is True else self.build(extra, depth + 1)
            return st.dictionaries(TEXT, values, max_size=0 if depth >= MAX_DEPTH else 2)
        required = set(schema.get("required", ()))
        fields = {name: self.build(sub, depth + 1) for name, sub in props.items()}

        @st.composite
        def build_object(draw: st.DrawFn) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, strategy in fields.items():
                if name in required or (depth < MAX_DEPTH and draw(st.booleans())):
                    out[name] = draw(strategy)
            return out

        return build_object()


def _structural(schema: dict[str, Any]) -> dict[str, Any]:
    ignored = {
        "description",
        "title",
        "default",
        "x-deserialize-default-on-error",
        "x-deserialize-skip-invalid-items",
        "x-docs-ignore",
    }
    return {k: v for k, v in schema.items() if k not in ignored}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = {**a, **{k: v for k, v in b.items() if k not in ("properties", "required")}}
    out["properties"] = {**a.get("properties", {}), **b.get("properties", {})}
    out["required"] = sorted(set(a.get("required", ())) | set(b.get("required", ())))
    if not out["properties"]:
        del out["properties"]
    return out
