"""What the generator builds before it emits: structs, their fields, unions, one module."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Field:
    json_name: str
    py_name: str
    annotation: str
    required: bool
    nullable: bool
    default_on_error: bool
    skip_invalid: bool
    description: str
    default_on_null: bool = False  # null reads as the type's empty value ([] or {})
    custom_union: str | None = None  # name of a custom union this field holds
    custom_many: bool = False


@dataclass
class StructDef:
    name: str
    doc: str
    fields: list[Field]
    tag_field: str | None = None
    tag: str | None = None
    base: str | None = None  # subclass of another generated struct (shared variant payloads)
    arms_check: list[tuple[list[str], dict[str, Any]]] | None = None  # flattened unions


@dataclass
class CustomUnion:
    """A union msgspec cannot decode natively: decoded by the containing struct."""

    name: str
    tag_field: str | None
    tagged: list[tuple[str, str]]  # (tag, struct name)
    ordered: list[str]  # untagged arms (type expressions), tried in order
    keep_unknown: bool  # an "other" arm: keep unknown objects as plain dicts
    type_members: list[str]


@dataclass
class Module:
    schema: dict[str, Any]
    defs: dict[str, Any]
    structs: dict[str, StructDef] = field(default_factory=dict)
    aliases: dict[str, str] = field(
        default_factory=dict
    )  # name -> annotation (emitted before classes)
    # Another name for a generated struct (emitted after the classes), e.g. proxy/initialize.
    struct_aliases: dict[str, str] = field(default_factory=dict)
    unions: dict[str, list[str]] = field(
        default_factory=dict
    )  # tagged msgspec unions (emitted after classes)
    custom_unions: dict[str, CustomUnion] = field(default_factory=dict)
    literals: dict[str, list[str]] = field(default_factory=dict)
    ref_counts: Counter[str] = field(default_factory=Counter)
    variant_names: dict[tuple[str, str], str] = field(default_factory=dict)
