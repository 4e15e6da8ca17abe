"""Emitting one generated types module: aliases, custom unions, structs, tagged unions."""

from __future__ import annotations

from collections import Counter

from tools.codegen.model import StructDef
from tools.codegen.reading import count_refs
from tools.codegen.tables import OPEN_ON_RECEIVE
from tools.codegen.typemap import TypeMapper


class StructEmitter(TypeMapper):
    """The emitting part of the generator (see `generate.Generator`)."""

    def emit(self, header: str) -> str:
        out = self.emit_head(header)
        self.emit_aliases(out)
        out.append("")
        out.append(
            "# Unions msgspec cannot decode natively (an arm without a tag, or untagged arms):"
        )
        out.append(
            "# the field is `Any` at runtime and the containing struct converts it in __post_init__."
        )
        for name, cu in self.m.custom_unions.items():
            out.append("if TYPE_CHECKING:")
            out.append(
                f"    {name}: TypeAlias = Union[{', '.join(self.quote_union_member(t) for t in cu.type_members)}]"
            )
            out.append("else:")
            out.append(f"    {name} = Any")
        out.append("")
        for sd in self.ordered_structs():
            out.extend(self.emit_struct(sd))
        out.append("")
        for name, target in self.m.struct_aliases.items():
            out.append(f"{name} = {target}")
        out.append("")
        for name, members in self.m.unions.items():
            if name in OPEN_ON_RECEIVE:
                unknown = OPEN_ON_RECEIVE[name]
                out.append("if TYPE_CHECKING:")
                out.append(f"    {name}: TypeAlias = Union[{', '.join(members + [unknown])}]")
                out.append("else:")
                out.append(f"    {name} = Union[{', '.join(members)}]")
            else:
                out.append(f"{name} = Union[{', '.join(members)}]")
        out.append("")
        out.append(
            "_CUSTOM_UNIONS: dict[str, tuple[str | None, dict[str, type], tuple[Any, ...], bool]] = {"
        )
        if self.only is not None:
            out.append("    **_v1._CUSTOM_UNIONS,")
        for name, cu in self.m.custom_unions.items():
            tagged = ", ".join(f"{t!r}: {v}" for t, v in cu.tagged)
            ordered = "".join(f"{self.runtime_type(o)}, " for o in cu.ordered)
            out.append(
                f"    {name!r}: ({cu.tag_field!r}, {{{tagged}}}, ({ordered}), {cu.keep_unknown}),"
            )
        out.append("}")
        out.append("")
        return "\n".join(out)

    def emit_head(self, header: str) -> list[str]:
        """The module's header, imports and `__all__`."""
        out: list[str] = [header, ""]
        out.append("from __future__ import annotations")
        out.append("")
        out.append("from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union")
        out.append("")
        out.append("from msgspec import UNSET, Meta, UnsetType, field")
        out.append("")
        out.append(
            "from acpstack.schema._base import AcpStruct, UnknownSessionUpdate, check_arms, coerce_fields"
        )
        if self.stable is not None:
            out.append(f"from acpstack.schema import {self.parent_module} as _v1")
        if self.only is not None:
            external = sorted(self.external_names())
            if external:
                out.append(f"from acpstack.schema.{self.parent_module} import (")
                out.extend(f"    {n}," for n in external)
                out.append(")")
        out.append("")
        out.append("if TYPE_CHECKING:")
        out.append("    from typing import TypeAlias")
        out.append("")
        out.append("__all__ = [")
        names = sorted(
            set(self.m.aliases)
            | set(self.m.struct_aliases)
            | set(self.m.structs)
            | set(self.m.unions)
            | set(self.m.custom_unions)
        )
        for n in names:
            out.append(f"    {n!r},")
        out.append("]")
        out.append("")
        return out

    def emit_aliases(self, out: list[str]) -> None:
        for name, ann in self.m.aliases.items():
            if name in self.m.literals and ann in ("str", "int"):
                out.append(
                    f"# Open enum: known values are {', '.join(self.m.literals[name])}; others are allowed."
                )
            out.append(f"{name} = {self.runtime_alias(ann)}")

    def external_names(self) -> set[str]:
        """$defs this (partial) module refers to but takes from its parent module."""
        local = (
            set(self.m.aliases)
            | set(self.m.struct_aliases)
            | set(self.m.structs)
            | set(self.m.unions)
            | set(self.m.custom_unions)
        )
        counter: Counter[str] = Counter()
        count_refs([self.m.defs[n] for n in self.only or ()], counter)
        return {n for n in counter if n not in local and self.classify(n) != "skip"}

    @staticmethod
    def quote_union_member(t: str) -> str:
        return f'"{t}"'  # the classes are defined further down

    @staticmethod
    def runtime_alias(ann: str) -> str:
        if " | " in ann and not ann.startswith("Annotated"):
            return (
                "Union[" + ", ".join(p if p != "None" else "None" for p in ann.split(" | ")) + "]"
            )
        return ann

    @staticmethod
    def runtime_type(ann: str) -> str:
        return ann

    def ordered_structs(self) -> list[StructDef]:
        done: set[str] = set()
        order: list[StructDef] = []

        def visit(sd: StructDef) -> None:
            if sd.name in done:
                return
            if sd.base and sd.base in self.m.structs:
                visit(self.m.structs[sd.base])
            done.add(sd.name)
            order.append(sd)

        for name in sorted(self.m.structs):
            visit(self.m.structs[name])
        return order

    def stable_parent(self, sd: StructDef) -> StructDef | None:
        if self.stable is None:
            return None
        return self.stable.m.structs.get(sd.name)

    def emit_struct(self, sd: StructDef) -> list[str]:
        base = sd.base or "AcpStruct"
        parent = self.stable_parent(sd)
        if parent is not None:
            base = f"{sd.base}, _v1.{sd.name}" if sd.base else f"_v1.{sd.name}"
        kwargs = ""
        if sd.tag is not None:
            kwargs = f", tag={sd.tag!r}, tag_field={sd.tag_field!r}"
        lines = [f"class {sd.name}({base}{kwargs}):"]
        lines.append(f'    """{sd.doc or sd.name}"""')
        lines.append("")
        lenient = {
            f.py_name: (f.default_on_error, f.skip_invalid, f.default_on_null)
            for f in sd.fields
            if f.default_on_error or f.skip_invalid or f.default_on_null
        }
        if lenient or parent is not None:  # a subclass must not inherit the stable parent's marks
            lines.append(
                f"    __acp_lenient__: ClassVar[dict[str, tuple[bool, bool, bool]]] = {lenient!r}"
            )
        if sd.arms_check is not None:
            lines.append(
                f"    __acp_arms__: ClassVar[list[tuple[list[str], dict[str, Any]]]] = {sd.arms_check!r}"
            )
        for f in sorted(sd.fields, key=lambda f: not f.required):
            ann = f.annotation
            if f.nullable:
                ann += " | None"
            default = ""
            if not f.required:
                ann += " | UnsetType"
                default = "UNSET"
            if f.json_name != f.py_name:
                default = (
                    f"field(default={default}, name={f.json_name!r})"
                    if default
                    else f"field(name={f.json_name!r})"
                )
            lines.append(f"    {f.py_name}: {ann}" + (f" = {default}" if default else ""))
            if f.description:
                lines.append(f'    """{f.description}"""')
        if not sd.fields and not lenient:
            lines.append("    pass") if sd.base else None
        customs = {f.py_name: (f.custom_union, f.custom_many) for f in sd.fields if f.custom_union}
        if customs or parent is not None:
            # Insert before the fields so the ClassVar block stays together.
            lines.insert(
                3, f"    __acp_unions__: ClassVar[dict[str, tuple[str, Any]]] = {customs!r}"
            )
        parent_post_init = parent is not None and (
            any(f.custom_union for f in parent.fields) or parent.arms_check is not None
        )
        if customs or sd.arms_check is not None or parent_post_init:
            lines.append("")
            lines.append("    def __post_init__(self) -> None:")
            if customs:
                lines.append("        coerce_fields(self, _CUSTOM_UNIONS)")
            if sd.arms_check is not None:
                lines.append("        check_arms(self)")
            if not customs and sd.arms_check is None:
                lines.append("        pass  # the stable parent's conversions do not apply here")
        lines.append("")
        lines.append("")
        return lines
