"""Which methods each side handles, with their params and result `$defs`, read from the schema."""

from __future__ import annotations

from dataclasses import dataclass

from tools.fuzz._values import SchemaValues


@dataclass(frozen=True)
class Method:
    name: str
    params: str  # $defs name of the params
    result: str | None  # $defs name of the result; None for a notification
    handled_by: str  # "agent", "client", "protocol" or "both"


def catalog(values: SchemaValues) -> list[Method]:
    """Every method of the (unstable superset) schema, from its `x-method` / `x-side` marks."""
    methods: dict[str, Method] = {}
    for name, definition in values.defs.items():
        method = definition.get("x-method")
        if method is None:
            continue
        side = definition.get("x-side", "")
        if name.endswith("Request"):
            result = name[: -len("Request")] + "Response"
            methods[method + "#" + name] = Method(
                method, name, result if values.has(result) else None, side
            )
        elif name.endswith("Notification"):
            methods[method + "#" + name] = Method(method, name, None, side)
    return sorted(methods.values(), key=lambda m: (m.name, m.params))


def handled_by(methods: list[Method], side: str) -> list[Method]:
    return [m for m in methods if m.handled_by in (side, "both", "protocol")]


def result_def(methods: list[Method], method: str) -> str | None:
    for m in methods:
        if m.name == method and m.result is not None:
            return m.result
    return None
