"""MkDocs hook (mkdocs.yml `hooks:`) that writes the parts of the API reference that would
be unreadable as docstring dumps. A reference page asks for them with one comment line:

- `<!-- methods: 1 -->`, `<!-- methods: 2 -->`: the protocol's methods as one table (who
  handles each, the Python handler and peer call, params and result types, the capability
  it needs, stable or unstable); `<!-- methods: 1 agent -->` keeps the rows one side handles.
- `<!-- types: v1 -->` (also v1_unstable, v1_nes, v2, v2_unstable): a schema module's
  generated types, one row each (fields and the docstring's first sentence); an unstable
  module lists only what it adds to its stable namesake.
- `<!-- api: acpstack.agent.SessionAgent -->`: the class's mkdocstrings block, with the
  members it inherits from hand-written classes but not the one-per-method stubs of the
  generated bases (those are the methods table).
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
import typing
from typing import Any

import msgspec

from acpstack.schema import method_table

# The generated one-per-method bases: their members are summarised by the methods table.
GENERATED_BASES = {
    "acpstack.agent._generated_peer",
    "acpstack.client._generated_peer",
}
TYPE_PAGES = {"v1": "schema-v1.md", "v1_unstable": "schema-v1.md", "v1_nes": "schema-v1.md"}
TYPE_PAGES |= {"v2": "schema-v2.md", "v2_unstable": "schema-v2.md"}
# Each unstable or extension module extends the one below it.
BELOW = {"v1_unstable": "v1", "v1_nes": "v1_unstable", "v2_unstable": "v2"}
MARKER = re.compile(r"^<!-- (methods|types|api): ([\w. ]+) -->$", re.MULTILINE)


def _schema_module(name: str) -> Any:
    return importlib.import_module(f"acpstack.schema._generated_{name}")


def _short_module(cls: type) -> str:
    return cls.__module__.rsplit("._generated_", 1)[-1]


def _summary(obj: Any) -> str:
    """The docstring's first sentence, on one line, safe in a table cell."""
    doc = " ".join((inspect.getdoc(obj) or "").split("\n\n", 1)[0].split())
    first = re.split(r"(?<=[.!?])\s", doc, maxsplit=1)[0]
    return first.replace("|", "\\|")


def _namesake(cls: type) -> Any:
    """The class an unstable or extension type extends: its namesake in the module below."""
    below = BELOW.get(_short_module(cls))
    return getattr(_schema_module(below), cls.__name__, None) if below else None


def _is_restated(cls: type) -> bool:
    """A type that only retypes its namesake below (the same field names)."""
    base = _namesake(cls)
    if not isinstance(base, type) or not issubclass(base, msgspec.Struct):
        return False
    return set(cls.__struct_fields__) == set(base.__struct_fields__)  # type: ignore[attr-defined]


def type_link(cls: Any, page: str) -> str:
    """`Name`, linked to its row in the types listing (a restated type: its namesake's)."""
    if not isinstance(cls, type) or "._generated_" not in cls.__module__:
        return f"`{getattr(cls, '__name__', cls)}`"
    while _is_restated(cls):
        cls = _namesake(cls)
    module = _short_module(cls)
    target = TYPE_PAGES[module]
    href = f"#{module}.{cls.__name__}" if target == page else f"{target}#{module}.{cls.__name__}"
    return f"[`{cls.__name__}`]({href})"


def methods_table(version: int, side: str | None, page: str) -> str:
    tables = [("stable", method_table(False, version=version))]
    tables.append(("unstable", method_table(True, version=version)))
    if version == 1:
        tables.append(("nes extension", method_table(True, ("nes",), version=version)))
    rows, seen = [], set()
    for status, table in tables:
        for spec in table:
            if (spec.name, spec.handler) in seen:  # a method may be a request and a notification
                continue
            seen.add((spec.name, spec.handler))
            if side and spec.handled_by not in (side, "both"):
                continue
            result = type_link(spec.result, page) if spec.result else "(notification)"
            gate = ".".join(spec.gate) if spec.gate else ""
            rows.append(
                f"| `{spec.name}` | {spec.kind} | {spec.handled_by} | `{spec.handler}` "
                f"| {type_link(spec.params, page)} | {result} | {gate} | {status} |"
            )
    head = (
        "| Method | Kind | Handled by | Handler / peer call | Params | Result "
        "| Needs capability | Status |\n|---|---|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(rows) + "\n"


def _type_name(member: Any) -> str:
    """A union member or literal value, as short as it reads in the source."""
    if typing.get_origin(member) is typing.Annotated:
        member = member.__origin__
    if isinstance(member, type):
        return "None" if member is type(None) else member.__name__
    if isinstance(member, str):
        return repr(member)
    return re.sub(r"\b[\w.]+\.(?=\w)", "", repr(member))


def _fields(cls: Any) -> str:
    required, optional = [], []
    for field in msgspec.structs.fields(cls):
        has_default = field.default is not msgspec.NODEFAULT
        has_default = has_default or field.default_factory is not msgspec.NODEFAULT
        (optional if has_default else required).append(f"`{field.name}`")
    text = ", ".join(required)
    if optional:
        text += ("; " if text else "") + "optional " + ", ".join(optional)
    return text


def _alias_row(module_name: str, name: str, alias: Any) -> str:
    if isinstance(alias, type):  # another name for a class
        parts = [alias.__name__]
    elif typing.get_origin(alias) in (typing.Union, types.UnionType, typing.Literal):
        parts = [_type_name(a) for a in alias.__args__]
    else:  # e.g. dict[str, Any]
        parts = [_type_name(alias)]
    members = ", ".join(f"`{p}`" for p in parts).replace("|", "\\|")
    return f'| <span id="{module_name}.{name}"></span>`{name}` | {members} |'


def types_listing(module_name: str) -> str:
    module = _schema_module(module_name)
    public = {n: getattr(module, n) for n in sorted(getattr(module, "__all__", dir(module)))}
    own = [
        c
        for n, c in public.items()
        if isinstance(c, type)
        and c.__name__ == n
        and c.__module__ == module.__name__
        and issubclass(c, msgspec.Struct)
    ]
    restated = [c.__name__ for c in own if _is_restated(c)]
    rows = []
    for cls in own:
        if cls.__name__ in restated:
            continue
        anchor = f'<span id="{module_name}.{cls.__name__}"></span>`{cls.__name__}`'
        fields = _fields(cls)
        base = _namesake(cls)
        if isinstance(base, type):
            added = set(cls.__struct_fields__) - set(base.__struct_fields__)
            fields = "adds " + ", ".join(f"`{n}`" for n in sorted(added))
        rows.append(f"| {anchor} | {fields} | {_summary(cls)} |")
    out = "| Type | Fields | What it is |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    aliases = [
        _alias_row(module_name, n, a)
        for n, a in public.items()
        if (isinstance(a, type) and a.__name__ != n and "._generated_" in a.__module__)
        or (not isinstance(a, type) and getattr(a, "__args__", None))
    ]
    if aliases:
        out += "\n| Alias | Stands for (one of) |\n|---|---|\n" + "\n".join(aliases) + "\n"
    if restated:
        out += (
            f"\nAlso here, the types below again with their fields typed by this module's "
            f"({len(restated)}): " + ", ".join(f"`{n}`" for n in restated) + ".\n"
        )
    return out


def inherited_members(cls: type) -> list[str]:
    """Public members `cls` inherits from hand-written classes (not from the generated
    one-per-method bases, nor `object` and the typing machinery)."""
    own = set(vars(cls))
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if base.__module__ in GENERATED_BASES or base.__module__ in ("builtins", "typing"):
            continue
        names |= {n for n in vars(base) if not n.startswith("_")}
    return sorted(names - own)


def api_block(path: str) -> str:
    module_name, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), name)
    inherited = inherited_members(cls) if isinstance(cls, type) else []
    listed = "[" + ", ".join(inherited) + "]" if inherited else "false"
    return f"::: {path}\n    options:\n      inherited_members: {listed}\n"


def expand(markdown: str, page: str) -> str:
    def replace(match: re.Match[str]) -> str:
        kind, args = match.group(1), match.group(2).split()
        if kind == "methods":
            return methods_table(int(args[0]), args[1] if len(args) > 1 else None, page)
        if kind == "types":
            return types_listing(args[0])
        return api_block(args[0])

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, *, page: Any, **_: Any) -> str:
    if "<!-- " not in markdown:
        return markdown
    return expand(markdown, page.file.src_uri.removeprefix("reference/"))
