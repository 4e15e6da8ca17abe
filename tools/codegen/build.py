"""Building the generator's model from `$defs`: aliases, enums, structs, tagged and custom
unions, flattened property sets."""

from __future__ import annotations

import json
from typing import Any

from tools.codegen.model import CustomUnion, Field, StructDef
from tools.codegen.naming import first_paragraph, pascal, snake
from tools.codegen.reading import CodegenError, arm_tag, const_of, is_other_arm, single_ref
from tools.codegen.typemap import TypeMapper


class StructBuilder(TypeMapper):
    """The building part of the generator (see `generate.Generator`)."""

    def build(self) -> None:
        names = [n for n in self.m.defs if self.only is None or n in self.only]
        for name in names:
            kind = self.classify(name)
            if kind == "custom_union":
                self.build_custom_union(name)
        for name in names:
            kind = self.classify(name)
            if kind in ("skip", "custom_union"):
                continue
            if kind == "any":
                self.m.aliases[name] = "Any"
            elif kind == "alias":
                self.build_alias(name)
            elif kind == "enum":
                self.build_enum(name)
            elif kind == "struct":
                if name not in self.m.structs:
                    self.m.structs[name] = self.struct_from(name, self.m.defs[name])
            elif kind == "flat_struct":
                if name not in self.m.structs:  # (a tagged variant is built with its union)
                    self.build_flat_struct(name)
            elif kind == "tagged_union":
                self.build_tagged_union(name)
            else:
                raise CodegenError(f"{name}: unhandled kind {kind}")

    def build_alias(self, name: str) -> None:
        d = self.m.defs[name]
        target = single_ref(d)
        if target is not None and "properties" not in d and "type" not in d:
            if self.classify(target) not in ("struct", "flat_struct"):
                raise CodegenError(f"{name}: alias of non-struct {target}")
            self.m.struct_aliases[name] = target
            return
        arms = d.get("anyOf") or d.get("oneOf")
        if arms is not None:  # e.g. RequestId = null | integer | string
            parts = []
            for arm in arms:
                ann, _, _, _ = self.annotation(arm, name)
                parts.append(ann)
            self.m.aliases[name] = " | ".join(parts)
            return
        ann, nullable, cu, _ = self.annotation(d, name)
        if cu is not None:
            raise CodegenError(f"{name}: alias of a custom union")
        self.m.aliases[name] = f"{ann} | None" if nullable else ann

    def build_enum(self, name: str) -> None:
        d = self.m.defs[name]
        arms = d.get("oneOf") or d.get("anyOf")
        values: list[Any] = []
        is_open = False
        base = "str"
        for arm in arms:
            value = const_of(arm)
            if value is None:
                if arm.get("type") in ("string", "integer"):
                    is_open = True
                    base = "int" if arm["type"] == "integer" else "str"
                    continue
                raise CodegenError(f"{name}: enum arm without const")
            values.append(value)
            if isinstance(value, int):
                base = "int"
        self.m.literals[name] = [json.dumps(v) for v in values]
        if is_open:
            # Open enums: unknown values are valid (custom `_x` or future ones).
            self.m.aliases[name] = base
        else:
            self.m.aliases[name] = f"Literal[{', '.join(json.dumps(v) for v in values)}]"

    def struct_from(
        self,
        name: str,
        d: dict[str, Any],
        *,
        tag: tuple[str, str] | None = None,
        skip_props: set[str] | None = None,
        base: str | None = None,
    ) -> StructDef:
        required = set(d.get("required", []))
        fields: list[Field] = []
        for json_name, sub in d.get("properties", {}).items():
            if skip_props and json_name in skip_props:
                continue
            fields.append(self.make_field(name, json_name, sub, json_name in required))
        return StructDef(
            name=name,
            doc=first_paragraph(d.get("description")),
            fields=fields,
            tag_field=tag[0] if tag else None,
            tag=tag[1] if tag else None,
            base=base,
        )

    def make_field(self, owner: str, json_name: str, sub: dict[str, Any], required: bool) -> Field:
        ann, nullable, cu, many = self.annotation(sub, f"{owner}.{json_name}")
        return Field(
            json_name=json_name,
            py_name=snake(json_name),
            annotation=ann,
            required=required,
            nullable=nullable,
            default_on_error=bool(sub.get("x-deserialize-default-on-error")),
            skip_invalid=bool(sub.get("x-deserialize-skip-invalid-items")),
            default_on_null=bool(sub.get("x-deserialize-default-on-null")),
            description=first_paragraph(sub.get("description")),
            custom_union=cu,
            custom_many=many,
        )

    def build_tagged_union(self, name: str) -> None:
        d = self.m.defs[name]
        arms = d.get("oneOf") or d.get("anyOf")
        members = []
        for arm in arms:
            tag = arm_tag(arm)
            assert tag is not None
            members.append(self.variant(name, arm, tag))
        self.m.unions[name] = members

    def variant(self, union: str, arm: dict[str, Any], tag: tuple[str, str]) -> str:
        """Create (or reuse) the Struct for one tagged arm and return its name."""
        ref = single_ref(arm)
        extra_props = {k: v for k, v in arm.get("properties", {}).items() if k != tag[0]}
        if ref is not None and not extra_props:
            target = self.m.defs[ref]
            kind = self.classify(ref)
            if kind == "flat_struct" and self.m.ref_counts[ref] == 1:
                # A variant whose payload is itself one of several property sets.
                self.build_flat_struct(ref)
                sd = self.m.structs[ref]
                sd.tag_field, sd.tag = tag
                sd.fields = [f for f in sd.fields if f.json_name != tag[0]]
                self.m.variant_names[(union, tag[1])] = ref
                return ref
            if kind != "struct":
                raise CodegenError(f"{union}: variant {tag[1]} refers to non-struct {ref}")
            if self.m.ref_counts[ref] == 1:
                # Payload used only here: the $def itself becomes the tagged variant.
                self.m.structs[ref] = self.struct_from(ref, target, tag=tag, skip_props={tag[0]})
                self.m.variant_names[(union, tag[1])] = ref
                return ref
            # Shared payload: a tagged subclass named from the tag.
            if ref not in self.m.structs:
                self.m.structs[ref] = self.struct_from(ref, target)
            vname = pascal(tag[1])
            if vname in self.m.defs:
                vname = union + vname
            self.m.structs[vname] = StructDef(
                name=vname,
                doc=f'`{union}` variant `{tag[0]}: "{tag[1]}"` (payload: `{ref}`).',
                fields=[],
                tag_field=tag[0],
                tag=tag[1],
                base=ref,
            )
            self.m.variant_names[(union, tag[1])] = vname
            return vname
        if ref is not None or "allOf" in arm:
            raise CodegenError(f"{union}: variant {tag[1]} mixes a $ref with extra properties")
        vname = pascal(tag[1]) + union
        self.m.structs[vname] = self.struct_from(vname, arm, tag=tag, skip_props={tag[0]})
        if not self.m.structs[vname].doc:
            self.m.structs[vname].doc = f'`{union}` variant `{tag[0]}: "{tag[1]}"`.'
        self.m.variant_names[(union, tag[1])] = vname
        return vname

    def build_custom_union(self, name: str) -> None:
        d = self.m.defs[name]
        arms = d.get("oneOf") or d.get("anyOf")
        tag_fields = {t[0] for t in (arm_tag(a) for a in arms) if t is not None}
        if len(tag_fields) > 1:
            raise CodegenError(f"{name}: several tag fields")
        tag_field = next(iter(tag_fields), None)
        cu = CustomUnion(
            name=name,
            tag_field=tag_field,
            tagged=[],
            ordered=[],
            keep_unknown=False,
            type_members=[],
        )
        self.m.custom_unions[name] = cu
        for arm in arms:
            if is_other_arm(arm):
                cu.keep_unknown = True
                cu.type_members.append("dict[str, Any]")
                continue
            tag = arm_tag(arm)
            if tag is not None:
                vname = self.variant(name, arm, tag)
                cu.tagged.append((tag[1], vname))
                cu.type_members.append(vname)
                continue
            ref = single_ref(arm)
            if ref is not None:
                if self.classify(ref) == "struct" and ref not in self.m.structs:
                    self.m.structs[ref] = self.struct_from(ref, self.m.defs[ref])
                cu.ordered.append(ref)
                cu.type_members.append(ref)
                continue
            ann, _, inner_cu, _ = self.annotation(arm, name)
            if inner_cu is not None:
                raise CodegenError(f"{name}: nested custom union")
            cu.ordered.append(ann)
            cu.type_members.append(ann)

    def build_flat_struct(self, name: str) -> None:
        """An object with its own properties plus an anyOf of property sets (flattened enum)."""
        d = self.m.defs[name]
        base = self.struct_from(name, d)
        known = {f.json_name: f for f in base.fields}
        arms = d.get("anyOf") or d.get("oneOf")
        checks: list[tuple[list[str], dict[str, Any]]] = []
        has_other = False
        for arm in arms:
            if is_other_arm(arm):
                has_other = True
                for json_name, sub in arm.get("properties", {}).items():
                    if json_name in known and known[json_name].annotation.startswith("Literal["):
                        known[json_name].annotation = "str"  # custom/future values are allowed
                    if json_name not in known:
                        f = self.make_field(
                            name,
                            json_name,
                            {k: v for k, v in sub.items() if k != "const"} | {"type": "string"}
                            if "const" in sub
                            else sub,
                            False,
                        )
                        base.fields.append(f)
                        known[json_name] = f
                continue
            props, required, consts = self.collect_arm(name, arm)
            for json_name, sub in props.items():
                ann, nullable, cu, many = self.annotation(sub, f"{name}.{json_name}")
                if json_name in known:
                    f = known[json_name]
                    if f.annotation != ann:
                        merged = {p.strip() for p in f.annotation.split(" | ")} | {ann}
                        if any(m.startswith("Literal[") for m in merged) and all(
                            m.startswith("Literal[") for m in merged
                        ):
                            values = sorted(
                                {v for m in merged for v in m[len("Literal[") : -1].split(", ")}
                            )
                            f.annotation = f"Literal[{', '.join(values)}]"
                        else:
                            f.annotation = " | ".join(sorted(merged))
                    f.nullable = f.nullable or nullable
                    continue
                f = Field(
                    json_name=json_name,
                    py_name=snake(json_name),
                    annotation=ann,
                    required=False,
                    nullable=nullable,
                    default_on_error=bool(sub.get("x-deserialize-default-on-error")),
                    skip_invalid=bool(sub.get("x-deserialize-skip-invalid-items")),
                    default_on_null=bool(sub.get("x-deserialize-default-on-null")),
                    description=first_paragraph(sub.get("description")),
                    custom_union=cu,
                    custom_many=many,
                )
                base.fields.append(f)
                known[json_name] = f
            checks.append((sorted(required), consts))
        if not has_other:
            base.arms_check = checks
        self.m.structs[name] = base

    def collect_arm(
        self, owner: str, arm: dict[str, Any]
    ) -> tuple[dict[str, Any], set[str], dict[str, Any]]:
        props: dict[str, Any] = dict(arm.get("properties", {}))
        required = set(arm.get("required", []))
        consts = {k: const_of(v) for k, v in props.items() if const_of(v) is not None}
        for part in arm.get("allOf", []):
            ref = single_ref(part)
            if ref is None:
                raise CodegenError(f"{owner}: arm allOf without $ref")
            target = self.m.defs[ref]
            sub_props, sub_req, sub_consts = self.collect_arm(owner, target)
            props.update(sub_props)
            required |= sub_req
            consts.update(sub_consts)
            inner = target.get("anyOf") or target.get("oneOf")
            if inner and "properties" in target:
                # Nested flattened union (e.g. an elicitation scope): its arms' fields are optional here.
                for inner_arm in inner:
                    p, _, _ = self.collect_arm(owner, inner_arm)
                    for k, v in p.items():
                        props.setdefault(k, v)
        return props, required, consts
