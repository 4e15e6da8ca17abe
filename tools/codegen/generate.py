"""Turn the vendored ACP JSON Schema into msgspec Structs and a method table.

Names come from the schema: `$defs` keep their upstream names, union variants are
named from their discriminator tag, methods from `meta.json` / `x-method` / `x-side`.
Anything the generator cannot map is an error, never a silent guess.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "vendor" / "acp-schema" / "v1"
OUT_DIR = ROOT / "src" / "acpstack"  # generated files are named relative to it

# JSON-RPC envelope unions: the wire layer handles envelopes itself.
ENVELOPE_DEFS = {
    "AgentRequest",
    "AgentResponse",
    "AgentNotification",
    "ClientRequest",
    "ClientResponse",
    "ClientNotification",
    "ProtocolLevelNotification",
    "ProxyRequest",
    "ProxyResponse",
    "ProxyNotification",
}
# Extension payloads are arbitrary JSON.
ANY_DEFS = {"ExtRequest", "ExtResponse", "ExtNotification"}
# Unions whose receivers must keep unknown variants instead of rejecting the message
# (ACP-INVENTORY §6.3.36/§2.1: clients tolerate and preserve unknown session updates).
OPEN_ON_RECEIVE = {"SessionUpdate": "UnknownSessionUpdate"}

# Capability gates, from ACP-INVENTORY §1.1/§1.2. A path of attribute names on the
# receiver's advertised capabilities; None = no capability gate (baseline, or a gate that
# depends on session state such as modes/config options in the session response).
GATES: dict[str, tuple[str, ...] | None] = {
    "initialize": None,
    "authenticate": None,
    "logout": ("auth", "logout"),
    "session/new": None,
    "session/load": ("load_session",),
    "session/list": ("session_capabilities", "list"),
    "session/delete": ("session_capabilities", "delete"),
    "session/resume": ("session_capabilities", "resume"),
    "session/close": ("session_capabilities", "close"),
    "session/fork": ("session_capabilities", "fork"),
    "session/archive": ("session_capabilities", "archive"),
    "session/unarchive": ("session_capabilities", "archive"),
    "session/status": ("session_capabilities", "status"),
    "session/set_title": ("session_capabilities", "title"),
    "auth/status": ("auth", "status"),
    "auth/status_update": None,  # sent by agents that advertise auth.status; clients need nothing
    "proxy/initialize": None,
    "proxy/successor": None,
    "session/set_mode": None,
    "session/set_config_option": None,
    "session/prompt": None,
    "session/cancel": None,
    "session/request_permission": None,
    "session/update": None,
    "fs/read_text_file": ("fs", "read_text_file"),
    "fs/write_text_file": ("fs", "write_text_file"),
    "terminal/create": ("terminal",),
    "terminal/output": ("terminal",),
    "terminal/wait_for_exit": ("terminal",),
    "terminal/kill": ("terminal",),
    "terminal/release": ("terminal",),
    "elicitation/create": ("elicitation",),
    "elicitation/complete": ("elicitation",),
    "$/cancel_request": None,
    "providers/list": ("providers",),
    "providers/set": ("providers",),
    "providers/disable": ("providers",),
    "nes/start": ("nes",),
    "nes/suggest": ("nes",),
    "nes/close": ("nes",),
    "nes/accept": ("nes",),
    "nes/reject": ("nes",),
    "document/didOpen": ("nes", "events", "document", "did_open"),
    "document/didChange": ("nes", "events", "document", "did_change"),
    "document/didClose": ("nes", "events", "document", "did_close"),
    "document/didSave": ("nes", "events", "document", "did_save"),
    "document/didFocus": ("nes", "events", "document", "did_focus"),
    "mcp/connect": None,
    "mcp/message": None,  # whoever declared an `acp` MCP server answers for it
    "mcp/disconnect": None,
}

# Proxy-chain methods (the `proxyMethods` group) between a conductor and a proxy. On the
# proxy's upstream connection the conductor is the client side and the proxy the agent
# side: the conductor sends `proxy/initialize`; `proxy/successor` goes both ways.
PROXY_SIDES: dict[str, str] = {"proxy/initialize": "agent", "proxy/successor": "both"}

INT_FORMATS = {
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, None),  # msgspec bounds must fit int64; it still rejects integers >= 2**64
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint": (0, None),
    "int": (None, None),
    "double": None,
    "float": None,
}


class CodegenError(Exception):
    pass


def snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    out = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", out).lower()
    out = out.replace("-", "_")
    if keyword.iskeyword(out):
        out += "_"
    return out


def pascal(tag: str) -> str:
    parts = re.split(r"[_\-/ ]+", tag)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


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


def first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    para = text.strip().split("\n\n")[0].replace("\n", " ").strip()
    return para.replace("\\", "\\\\").replace('"""', "'''")


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


class Generator:
    def __init__(
        self,
        schema: dict[str, Any],
        module_name: str,
        stable: Generator | None = None,
        *,
        parent_module: str = "_generated_v1",
        only: set[str] | None = None,
    ) -> None:
        self.m = Module(schema=schema, defs=schema["$defs"])
        self.module_name = module_name
        self.parent_module = parent_module
        # Generate only these $defs (the others are looked up, and imported by `emit`).
        self.only = only
        # For the unstable module: its structs subclass the stable ones of the same name, so
        # `isinstance(x, v1.TextContent)` holds whichever module decoded `x`.
        self.stable = stable
        count_refs(self.m.defs, self.m.ref_counts)

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

    # ---- building ---------------------------------------------------------
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

    # ---- emitting ---------------------------------------------------------
    def emit(self, header: str) -> str:
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
        for name, ann in self.m.aliases.items():
            if name in self.m.literals and ann in ("str", "int"):
                out.append(
                    f"# Open enum: known values are {', '.join(self.m.literals[name])}; others are allowed."
                )
            out.append(f"{name} = {self.runtime_alias(ann)}")
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
            f.py_name: (f.default_on_error, f.skip_invalid)
            for f in sd.fields
            if f.default_on_error or f.skip_invalid
        }
        if lenient or parent is not None:  # a subclass must not inherit the stable parent's marks
            lines.append(
                f"    __acp_lenient__: ClassVar[dict[str, tuple[bool, bool]]] = {lenient!r}"
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


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class MethodRow:
    name: str
    handler: str
    side: str
    kind: str
    params: str
    result: str | None
    gate: tuple[str, ...] | None
    unstable: bool


GROUPS = (
    ("agentMethods", "agent"),
    ("clientMethods", "client"),
    ("protocolMethods", "protocol"),
    ("proxyMethods", None),  # sides from PROXY_SIDES
)


def method_sides(meta: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Method name -> (handler name, handled_by), in the map's order. A method listed for
    both the agent and the client (`mcp/message`) is handled by "both"."""
    found: dict[str, tuple[str, str]] = {}
    for group, group_side in GROUPS:
        for handler, method in meta.get(group, {}).items():
            side = group_side
            if side is None:
                if method not in PROXY_SIDES:
                    raise CodegenError(f"proxy method {method} has no entry in PROXY_SIDES")
                side = PROXY_SIDES[method]
            if method in found and found[method][1] != side:
                side = "both"
            found[method] = (found.get(method, (handler, side))[0], side)
    return found


def method_rows(
    schema: dict[str, Any],
    meta: dict[str, Any],
    stable_names: set[str],
    only: set[str] | None = None,
    gates: dict[str, tuple[str, ...] | None] | None = None,
) -> list[MethodRow]:
    gates = GATES if gates is None else gates
    defs = schema["$defs"]
    rows = []
    by_method: dict[str, list[str]] = {}
    for name, d in defs.items():
        if "x-method" in d:
            by_method.setdefault(d["x-method"], []).append(name)
    for method, (handler, side) in method_sides(meta).items():
        if only is not None and method not in only:
            continue
        names = by_method.get(method)
        if not names:
            raise CodegenError(f"method {method} has no x-method definitions")
        if method not in gates:
            raise CodegenError(f"method {method} has no capability gate entry in GATES")
        results = [n for n in names if n.endswith("Response")]
        unstable = method not in stable_names
        both_kinds = any(n.endswith("Request") for n in names) and any(
            n.endswith("Notification") for n in names
        )
        for kind, suffix in (("request", "Request"), ("notification", "Notification")):
            params = [n for n in names if n.endswith(suffix)]
            if not params:
                continue
            if kind == "notification" and both_kinds:
                handler += "_notification"  # e.g. mcp/message: a request and a notification
            if kind == "request" and not results:
                raise CodegenError(f"request {method} has no response definition")
            result = results[0] if kind == "request" else None
            rows.append(
                MethodRow(method, handler, side, kind, params[0], result, gates[method], unstable)
            )
    return rows


def emit_methods(
    var: str, modules: list[tuple[str, str, set[str] | None]], rows: list[MethodRow], header: str
) -> str:
    """The method table of one schema (the unstable one is a separate module, imported
    only by connections that opt in, so a stable agent's cold start skips its types).
    `modules`: (module, alias, the names it provides or None for all), first match wins."""
    out = [header, "", "from __future__ import annotations", ""]
    for module, alias, _ in modules:
        out.append(f"from acpstack.schema import {module} as {alias}")
    out += ["from acpstack.schema._base import MethodSpec", "", f"__all__ = [{var!r}]", ""]

    def ref(name: str) -> str:
        alias = next(a for _, a, names in modules if names is None or name in names)
        return f"{alias}.{name}"

    out.append(f"{var}: tuple[MethodSpec, ...] = (")
    for r in rows:
        result = ref(r.result) if r.result else "None"
        out.append(
            f"    MethodSpec(name={r.name!r}, handler={r.handler!r}, handled_by={r.side!r}, kind={r.kind!r}, "
            f"params={ref(r.params)}, result={result}, gate={r.gate!r}, unstable={r.unstable}),"
        )
    out.append(")")
    out.append("")
    return "\n".join(out)


HEADER = (
    "# Generated by tools/codegen from vendor/acp-schema/{src} ({sha}); do not edit.\n# ruff: noqa"
)
VENDOR_DIR = ROOT / "vendor" / "acp-schema"
# The frozen extensions: name -> (folder, schema, meta, the methods it keeps).
EXTENSIONS = {
    "nes": (
        "frozen-nes",
        "schema.unstable.v1.21.0.json",
        "meta.unstable.v1.21.0.json",
        ("nes/", "document/"),
    ),
}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def generate_version(version: str = "v1") -> dict[str, str]:
    """The generated modules of one protocol version folder (`vendor/acp-schema/<version>`)."""
    folder = VENDOR_DIR / version
    stable_schema = load(folder / "schema.json")
    unstable_schema = load(folder / "schema.unstable.json")
    stable_meta = load(folder / "meta.json")
    unstable_meta = load(folder / "meta.unstable.json")
    stable_mod, unstable_mod = f"_generated_{version}", f"_generated_{version}_unstable"
    outputs: dict[str, str] = {}
    stable_gen = Generator(stable_schema, f"{stable_mod}.py")
    stable_gen.build()
    outputs["schema/" + f"{stable_mod}.py"] = stable_gen.emit(
        HEADER.format(src=f"{version}/schema.json", sha=sha(folder / "schema.json"))
    )
    unstable_gen = Generator(
        unstable_schema, f"{unstable_mod}.py", stable=stable_gen, parent_module=stable_mod
    )
    unstable_gen.build()
    outputs["schema/" + f"{unstable_mod}.py"] = unstable_gen.emit(
        HEADER.format(
            src=f"{version}/schema.unstable.json", sha=sha(folder / "schema.unstable.json")
        )
    )
    stable_names = set(method_sides(stable_meta))
    suffix = "" if version == "v1" else f"_{version}"
    outputs["schema/" + f"_generated_methods{suffix}.py"] = emit_methods(
        "STABLE_METHODS",
        [(stable_mod, version, None)],
        method_rows(stable_schema, stable_meta, stable_names),
        HEADER.format(src=f"{version}/meta.json", sha=sha(folder / "meta.json")),
    )
    unstable_rows = method_rows(unstable_schema, unstable_meta, stable_names)
    outputs["schema/" + f"_generated_methods{suffix}_unstable.py"] = emit_methods(
        "UNSTABLE_METHODS",
        [(unstable_mod, f"{version}u", None)],
        unstable_rows,
        HEADER.format(src=f"{version}/meta.unstable.json", sha=sha(folder / "meta.unstable.json")),
    )
    for name in EXTENSIONS:
        outputs.update(generate_extension(name, unstable_schema, unstable_gen, unstable_rows))
    if version == "v1":
        outputs.update(generate_peers(stable_names, unstable_schema, unstable_rows))
    return outputs


def generate_peers(
    stable_names: set[str], unstable_schema: dict[str, Any], unstable_rows: list[MethodRow]
) -> dict[str, str]:
    """`agent/_generated_peer.py` and `client/_generated_peer.py` (see tools/codegen/peers.py)."""
    from tools.codegen.peers import collect, emit_side

    rows = list(unstable_rows)
    groups = {r.name: "stable" if r.name in stable_names else "unstable" for r in rows}
    defs = dict(unstable_schema["$defs"])
    for name, (folder, schema_file, meta_file, prefixes) in EXTENSIONS.items():
        frozen = load(VENDOR_DIR / folder / schema_file)
        meta = load(VENDOR_DIR / folder / meta_file)
        methods = {m for m in method_sides(meta) if m.startswith(prefixes)}
        rows += method_rows(frozen, meta, set(), only=methods)
        groups.update((m, name) for m in methods)
        defs.update((k, v) for k, v in frozen["$defs"].items() if k not in defs)
    methods = collect(rows, groups, defs)
    header = HEADER.format(
        src="v1/meta.unstable.json and the frozen extensions",
        sha=sha(VENDOR_DIR / "v1" / "meta.unstable.json"),
    )
    return {
        "agent/_generated_peer.py": emit_side("agent", "client", methods, defs, header),
        "client/_generated_peer.py": emit_side("client", "agent", methods, defs, header),
    }


def generate_extension(
    name: str, current: dict[str, Any], current_gen: Generator, current_rows: list[MethodRow]
) -> dict[str, str]:
    """A frozen extension (see tools/codegen/extension.py): its types and its method table,
    which is the current unstable table with the extension's methods added."""
    from tools.codegen.extension import extension_defs

    folder, schema_file, meta_file, prefixes = EXTENSIONS[name]
    frozen = load(VENDOR_DIR / folder / schema_file)
    meta = load(VENDOR_DIR / folder / meta_file)
    methods = {m for m in method_sides(meta) if m.startswith(prefixes)}
    schema, own = extension_defs(frozen, current, methods)
    module = f"_generated_v1_{name}"
    gen = Generator(
        schema,
        f"{module}.py",
        stable=current_gen,
        parent_module="_generated_v1_unstable",
        only=own,
    )
    gen.build()
    src = f"{folder}/{schema_file}"
    rows = current_rows + method_rows(frozen, meta, set(), only=methods)
    return {
        f"schema/{module}.py": gen.emit(
            HEADER.format(src=src, sha=sha(VENDOR_DIR / folder / schema_file))
        ),
        f"schema/_generated_methods_{name}.py": emit_methods(
            f"{name.upper()}_METHODS",
            [(module, name, own), ("_generated_v1_unstable", "v1u", None)],
            rows,
            HEADER.format(src=f"{folder}/{meta_file}", sha=sha(VENDOR_DIR / folder / meta_file)),
        ),
    }


def generate_all() -> dict[str, str]:
    from tools.codegen.v2 import generate_v2  # v2 side by side (see tools/codegen/v2.py)

    return generate_version("v1") | generate_v2()
