"""Mapping schema types to Python annotations, and classifying each `$def`."""

from __future__ import annotations

import json
from typing import Any

from tools.codegen.model import Module
from tools.codegen.reading import CodegenError, arm_tag, single_ref
from tools.codegen.tables import ANY_DEFS, ENVELOPE_DEFS, INT_FORMATS


class TypeMapper:
    """The type mapping part of the generator (see `generate.Generator`)."""

    m: Module
    only: set[str] | None
    stable: TypeMapper | None
    parent_module: str

    # ---- type expressions -------------------------------------------------
    def annotation(self, schema: dict[str, Any], where: str) -> tuple[str, bool, str | None, bool]:
        """Return (annotation, nullable, custom_union, many) for a property schema."""
        ref = single_ref(schema)
        if ref is not None and set(schema) <= {
            "$ref",
            "allOf",
            "description",
            "title",
            "x-deserialize-default-on-error",
            "x-deserialize-skip-invalid-items",
            "x-deserialize-default-on-null",
            "default",
        }:
            return self.ref_annotation(ref)
        for key in ("anyOf", "oneOf"):
            if key in schema and "properties" not in schema:
                arms = schema[key]
                non_null = [a for a in arms if a.get("type") != "null"]
                nullable = len(non_null) != len(arms)
                if len(non_null) == 1:
                    ann, inner_null, cu, many = self.annotation(non_null[0], where)
                    return ann, nullable or inner_null, cu, many
                raise CodegenError(f"{where}: inline union not supported")
        types = schema.get("type")
        nullable = False
        if isinstance(types, list):
            nullable = "null" in types
            rest = [t for t in types if t != "null"]
            if len(rest) != 1:
                raise CodegenError(f"{where}: multi-type {types}")
            types = rest[0]
        if types is None:
            if "const" in schema:
                return f"Literal[{json.dumps(schema['const'])}]", False, None, False
            if set(schema) <= {"description", "title", "x-deserialize-default-on-error", "default"}:
                return "Any", False, None, False
            raise CodegenError(f"{where}: cannot map {schema}")
        if types == "string":
            if "const" in schema:
                return f"Literal[{json.dumps(schema['const'])}]", nullable, None, False
            if "enum" in schema:
                return (
                    f"Literal[{', '.join(json.dumps(v) for v in schema['enum'])}]",
                    nullable,
                    None,
                    False,
                )
            return "str", nullable, None, False
        if types == "boolean":
            return "bool", nullable, None, False
        if types == "integer":
            return self.int_annotation(schema, where), nullable, None, False
        if types == "number":
            return "float", nullable, None, False
        if types == "array":
            items = schema.get("items")
            if items is None:
                return "list[Any]", nullable, None, False
            inner, inner_null, cu, _ = self.annotation(items, where + "[]")
            if inner_null:
                inner = f"{inner} | None"
            return f"list[{inner}]", nullable, cu, False if cu is None else "list"  # type: ignore[return-value]
        if types == "object":
            if "properties" in schema:
                raise CodegenError(f"{where}: inline object with properties")
            extra = schema.get("additionalProperties", True)
            if extra is True or extra == {}:
                return "dict[str, Any]", nullable, None, False
            inner, inner_null, cu, _ = self.annotation(extra, where + "{}")
            if inner_null:
                inner = f"{inner} | None"
            return f"dict[str, {inner}]", nullable, cu, False if cu is None else "map"  # type: ignore[return-value]
        if types == "null":
            return "None", True, None, False
        raise CodegenError(f"{where}: unknown type {types}")

    def int_annotation(self, schema: dict[str, Any], where: str) -> str:
        fmt = schema.get("format")
        lo = schema.get("minimum")
        hi = schema.get("maximum")
        if fmt is not None:
            if fmt not in INT_FORMATS or INT_FORMATS[fmt] is None:
                raise CodegenError(f"{where}: integer format {fmt}")
            flo, fhi = INT_FORMATS[fmt]  # type: ignore[misc]
            lo = flo if lo is None else max(lo, flo) if flo is not None else lo
            hi = fhi if hi is None else hi
        args = []
        if lo is not None:
            args.append(f"ge={lo}")
        if hi is not None:
            args.append(f"le={hi}")
        if not args:
            return "int"
        return f"Annotated[int, Meta({', '.join(args)})]"

    def ref_annotation(self, name: str) -> tuple[str, bool, str | None, bool]:
        if name not in self.m.defs:
            raise CodegenError(f"unknown $def {name}")
        if name in self.m.custom_unions or self.classify(name) == "custom_union":
            return name, False, name, False
        return name, False, None, False

    # ---- classification ---------------------------------------------------
    def classify(self, name: str) -> str:
        d = self.m.defs[name]
        if name in ENVELOPE_DEFS:
            return "skip"
        if name in ANY_DEFS:
            return "any"
        has_props = "properties" in d
        union_key = "oneOf" if "oneOf" in d else "anyOf" if "anyOf" in d else None
        if has_props and union_key is None:
            return "struct"
        if has_props and union_key is not None:
            return "flat_struct"
        if union_key is None:
            if single_ref(d) is not None and "properties" not in d:
                return "alias"  # e.g. InitializeProxyRequest: the same as InitializeRequest
            t = d.get("type")
            if t in ("string", "integer", "number", "boolean", "array", "object") or "$ref" in d:
                return "alias"
            if t is None and {k for k in d if not k.startswith("x-")} <= {"description", "title"}:
                return "any"
            raise CodegenError(f"{name}: cannot classify {list(d)}")
        arms = d[union_key]
        if all(a.get("type") in ("string", "integer") and "properties" not in a for a in arms):
            return "enum"
        if all(
            a.get("type") in ("null", "integer", "string", "number", "boolean", "array")
            and "const" not in a
            and "properties" not in a
            and "$ref" not in json.dumps(a)
            for a in arms
        ):
            return "alias"  # a union of plain JSON types, which msgspec decodes natively
        tags = [arm_tag(a) for a in arms]
        tagged = [t for t in tags if t is not None]
        if not tagged and all(
            a.get("type") == "object" and "properties" in a and "$ref" not in a for a in arms
        ):
            return "flat_struct"  # e.g. MessageMcpResponse: one of several property sets
        if tagged and len(tagged) == len(arms) and len({t[0] for t in tagged}) == 1:
            return "tagged_union"
        return "custom_union"
