"""ACP v2 (`vendor/acp-schema/v2`): its types and method tables, side by side with v1.

The v1 generator does almost everything; what v2 adds is handled here, apart from the
v1 code paths:

- a tagged variant whose payload is itself a tagged union (`SessionUpdate` variant
  `state_update` carries a `StateUpdate`, tagged by `state`): each inner variant gets a
  subclass that also carries the outer tag (`SessionUpdateIdleStateUpdate` is an
  `IdleStateUpdate` with `sessionUpdate: "state_update"`), and the outer union decodes
  through the inner one;
- unknown `session/update` variants (v2 unions are open) are kept as
  `UnknownSessionUpdate`, as v1 keeps them;
- the capability gates of the v2 methods (`V2_GATES`).

v2 types never subclass v1 types: the two models stay separate.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from tools.codegen.generate import HEADER, VENDOR_DIR, Generator, sha
from tools.codegen.methods import emit_methods, method_rows, method_sides
from tools.codegen.model import StructDef
from tools.codegen.reading import CodegenError, arm_tag, is_other_arm, load, single_ref

# Capability gates of v2 (ACP-INVENTORY §1.3): `session` present makes new, list, resume,
# close, prompt, cancel and update baseline; `auth/*` need non-empty `authMethods`, which is
# not a capability path (checked by the runtime).
V2_GATES: dict[str, tuple[str, ...] | None] = {
    "initialize": None,
    "auth/login": None,
    "auth/logout": None,
    "auth/status": ("auth", "status"),
    "auth/status_update": None,
    "session/new": ("session",),
    "session/list": ("session",),
    "session/resume": ("session",),
    "session/close": ("session",),
    "session/delete": ("session", "delete"),
    "session/fork": ("session", "fork"),
    "session/archive": ("session", "archive"),
    "session/unarchive": ("session", "archive"),
    "session/status": ("session", "status"),
    "session/set_title": ("session", "title"),
    "session/set_config_option": ("session",),
    "session/prompt": ("session",),
    "session/cancel": ("session",),
    "tool_call/cancel": None,  # per tool call: its `capabilities.cancel`
    "terminal/cancel": None,  # per terminal: its `capabilities.cancel`
    "session/request_permission": None,
    "session/update": None,
    "elicitation/create": ("elicitation",),
    "elicitation/complete": ("elicitation",),
    "$/cancel_request": None,
    "providers/list": ("providers",),
    "providers/set": ("providers",),
    "providers/disable": ("providers",),
    "mcp/message": None,
    "proxy/initialize": None,
    "proxy/successor": None,
}
# Unions whose unknown variants are kept as this struct (the others keep a plain dict).
UNKNOWN_AS = {"SessionUpdate": "UnknownSessionUpdate"}


class V2Generator(Generator):
    """The v1 generator plus nested tagged unions and `UnknownSessionUpdate` for v2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Subclasses that carry an outer tag: name -> (outer tag field, outer tag value).
        self.outer_tagged: dict[str, tuple[str, str]] = {}
        # The spec expression of each nested variant -> the subclasses it decodes to.
        self.nested_members: dict[str, list[str]] = {}

    def variant(self, union: str, arm: dict[str, Any], tag: tuple[str, str]) -> str:
        ref = single_ref(arm)
        extra = {k for k in arm.get("properties", {}) if k != tag[0]}
        if ref is None or extra or self.classify(ref) not in ("custom_union", "tagged_union"):
            return super().variant(union, arm, tag)
        return self.nested_variant(union, ref, tag)

    def nested_variant(self, union: str, inner: str, tag: tuple[str, str]) -> str:
        """The spec (a Python expression) of a variant whose payload is the union `inner`."""
        arms = self.m.defs[inner].get("anyOf") or self.m.defs[inner].get("oneOf")
        tagged: list[tuple[str, str]] = []
        inner_field = None
        keep_unknown = False
        for arm in arms:
            if is_other_arm(arm):
                keep_unknown = True
                continue
            inner_tag = arm_tag(arm)
            if inner_tag is None:
                raise CodegenError(f"{union}: variant {tag[1]}: untagged arm in {inner}")
            inner_field = inner_tag[0]
            member = self.variant(inner, arm, inner_tag)
            name = union + member
            self.m.structs[name] = StructDef(
                name=name,
                doc=f'`{union}` variant `{tag[0]}: "{tag[1]}"` with `{inner_tag[0]}: '
                f'"{inner_tag[1]}"` (payload: `{member}`).',
                fields=[],
                base=member,
            )
            self.outer_tagged[name] = tag
            tagged.append((inner_tag[1], name))
        self.m.variant_names[(union, tag[1])] = " | ".join(n for _, n in tagged)
        kept: str = repr(keep_unknown)
        if keep_unknown and union in UNKNOWN_AS:
            kept = UNKNOWN_AS[union]
        members = ", ".join(f"{t!r}: {n}" for t, n in tagged)
        spec = f"({inner_field!r}, {{{members}}}, (), {kept})"
        self.nested_members[spec] = [n for _, n in tagged]
        return spec

    def build_custom_union(self, name: str) -> None:
        super().build_custom_union(name)
        cu = self.m.custom_unions[name]
        members: list[str] = []
        for member in cu.type_members:
            if member in self.nested_members:  # a nested spec: the subclasses it decodes to
                members += self.nested_members[member]
            elif member == "dict[str, Any]" and name in UNKNOWN_AS:
                members.append(UNKNOWN_AS[name])
            else:
                members.append(member)
        cu.type_members = list(dict.fromkeys(members))
        if cu.keep_unknown and name in UNKNOWN_AS:
            cu.keep_unknown = UNKNOWN_AS[name]  # type: ignore[assignment]

    def emit(self, header: str) -> str:
        text = super().emit(header)
        old = "_CUSTOM_UNIONS: dict[str, tuple[str | None, dict[str, type], tuple[Any, ...], bool]]"
        if old not in text:
            raise CodegenError("the custom union table changed shape: update V2Generator.emit")
        text = text.replace(old, "_CUSTOM_UNIONS: dict[str, tuple[Any, ...]]")
        imports = "check_arms, coerce_fields"
        if imports not in text:
            raise CodegenError("the _base import changed shape: update V2Generator.emit")
        text = text.replace(imports, "check_arms, coerce_fields, open_union", 1)
        text += self.emit_open_unions()
        # The unstable module subclasses the stable v2 one, which v1's code calls `_v1`.
        return re.sub(r"\b_v1\b", "_stable", text)

    def emit_open_unions(self) -> str:
        """The runtime type of each open union whose known variants are all tagged on one
        field (and at least two are plain structs): msgspec's own tagged union of those, so
        that a known variant decodes in one pass (`open_union` in schema/_base.py)."""
        names = self.native_open_unions()
        if not names:
            return ""
        out = [
            "# Open unions whose variants are all tagged: at runtime msgspec's tagged union of",
            "# their known variants, which decodes in one pass (an unknown or nested variant is",
            "# converted apart: `convert` in schema/_base.py).",
            "if not TYPE_CHECKING:",
        ]
        out += [f"    {name} = open_union(_CUSTOM_UNIONS[{name!r}])" for name in names]
        return "\n".join(out) + "\n"

    def native_open_unions(self) -> list[str]:
        """The open unions given msgspec's native tagged union at runtime."""
        return [
            name
            for name, cu in self.m.custom_unions.items()
            if cu.tag_field is not None
            and not cu.ordered
            and (cu.keep_unknown or any(v in self.nested_members for _, v in cu.tagged))
            and sum(v not in self.nested_members for _, v in cu.tagged) >= 2
        ]

    def emit_struct(self, sd: StructDef) -> list[str]:
        outer = self.outer_tagged.get(sd.name)
        if outer is None:
            return self.guarded_post_init(sd, super().emit_struct(sd))
        field_name, value = outer
        return [
            f"class {sd.name}({sd.base}):",
            f'    """{sd.doc}"""',
            "",
            f"    session_update: Literal[{value!r}] = field(default={value!r}, name={field_name!r})"
            if field_name == "sessionUpdate"
            else f"    {field_name}: Literal[{value!r}] = {value!r}",
            "",
            "",
        ]

    def guarded_post_init(self, sd: StructDef, lines: list[str]) -> list[str]:
        """A struct whose custom-union fields are all single values of native open unions
        converts them only when one is not a struct yet (built in code from a dict): a
        decoded one is typed already, and this runs for every update a client receives."""
        customs = [f for f in sd.fields if f.custom_union]
        native = set(self.native_open_unions())
        call = "        coerce_fields(self, _CUSTOM_UNIONS)"
        if not customs or call not in lines:
            return lines
        if any(f.custom_many or f.custom_union not in native for f in customs):
            return lines
        unions = self.m.custom_unions
        if not any(
            v in self.nested_members for f in customs for _, v in unions[f.custom_union].tagged
        ):
            # Nothing to unpack after a decode either: no __post_init__ at all (msgspec
            # would call it for every decoded struct, such as each streamed chunk). A
            # struct built in code keeps what it is given, as v1's do.
            at = lines.index("    def __post_init__(self) -> None:")
            return [*lines[: at - 1], *lines[at + 2 :]]
        test = " or ".join(f"not isinstance(self.{f.py_name}, AcpStruct)" for f in customs)
        at = lines.index(call)
        return [*lines[:at], f"        if {test}:", "    " + call, *lines[at + 1 :]]


def v2_rows(schema: dict[str, Any], meta: dict[str, Any], stable_names: set[str]) -> list[Any]:
    """The method table rows of one v2 schema, with the v2 capability gates. Handlers are
    named `v2_<name>`: an agent or client that speaks both versions has both sets, and the
    runtime calls the set of the version the connection negotiated."""
    rows = method_rows(schema, meta, stable_names, gates=V2_GATES)
    return [dataclasses.replace(r, handler=f"v2_{r.handler}") for r in rows]


def generate_v2() -> dict[str, str]:
    """`schema/_generated_v2{,_unstable}.py` and `schema/_generated_methods_v2{,_unstable}.py`."""
    folder = VENDOR_DIR / "v2"
    stable_schema = load(folder / "schema.json")
    unstable_schema = load(folder / "schema.unstable.json")
    stable_meta = load(folder / "meta.json")
    unstable_meta = load(folder / "meta.unstable.json")
    stable_gen = V2Generator(stable_schema, "_generated_v2.py")
    stable_gen.build()
    unstable_gen = V2Generator(
        unstable_schema,
        "_generated_v2_unstable.py",
        stable=stable_gen,
        parent_module="_generated_v2",
    )
    unstable_gen.build()
    stable_names = set(method_sides(stable_meta))

    def header(name: str) -> str:
        return HEADER.format(src=f"v2/{name}", sha=sha(folder / name))

    return {
        "schema/_generated_v2.py": stable_gen.emit(header("schema.json")),
        "schema/_generated_v2_unstable.py": unstable_gen.emit(header("schema.unstable.json")),
        "schema/_generated_methods_v2.py": emit_methods(
            "STABLE_METHODS",
            [("_generated_v2", "v2", None)],
            v2_rows(stable_schema, stable_meta, stable_names),
            header("meta.json"),
        ),
        "schema/_generated_methods_v2_unstable.py": emit_methods(
            "UNSTABLE_METHODS",
            [("_generated_v2_unstable", "v2u", None)],
            v2_rows(unstable_schema, unstable_meta, stable_names),
            header("meta.unstable.json"),
        ),
    }


__all__ = ["V2_GATES", "V2Generator", "generate_v2"]
