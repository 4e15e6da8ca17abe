"""Reading the vendored schema: loading it, following `$ref`s, finding tags and constants."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any


class CodegenError(Exception):
    pass


def ref_name(ref: str) -> str:
    if not ref.startswith("#/$defs/"):
        raise CodegenError(f"unsupported $ref {ref}")
    return ref[len("#/$defs/") :]


def single_ref(schema: dict[str, Any]) -> str | None:
    """The one $def a schema points at (`$ref` or a one-element `allOf`)."""
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    all_of = schema.get("allOf")
    if all_of and len(all_of) == 1 and "$ref" in all_of[0]:
        return ref_name(all_of[0]["$ref"])
    return None


def count_refs(obj: Any, counter: Counter[str]) -> None:
    if isinstance(obj, dict):
        if "$ref" in obj:
            counter[ref_name(obj["$ref"])] += 1
        for value in obj.values():
            count_refs(value, counter)
    elif isinstance(obj, list):
        for value in obj:
            count_refs(value, counter)


def const_of(schema: dict[str, Any]) -> Any:
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if enum and len(enum) == 1:
        return enum[0]
    return None


def arm_tag(arm: dict[str, Any]) -> tuple[str, str] | None:
    for prop, sub in arm.get("properties", {}).items():
        value = const_of(sub)
        if isinstance(value, str):
            return prop, value
    return None


def is_other_arm(arm: dict[str, Any]) -> bool:
    return arm.get("title") == "other"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
