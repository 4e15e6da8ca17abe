"""The method table: one row per method and direction, from the method maps and `x-method`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.codegen.reading import CodegenError
from tools.codegen.tables import GATES, PROXY_SIDES


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
    both the agent and the client (`mcp/message`) is "both" here; `method_rows` then takes
    each message's own direction (its request's, its notification's) from its `x-side`."""
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


SCHEMA_SIDES = ("agent", "client", "protocol")


def direction(method: str, definition: str, d: dict[str, Any], listed: str) -> str:
    """Who handles one message of `method` (its request or its notification): the
    definition's `x-side`. `listed` is the side the method maps give the whole method
    ("both" when both sides list it, as `mcp/message`, whose requests the client answers
    and whose notifications the agent receives). `x-side` "both" or "proxy" (the proxy
    methods, see PROXY_SIDES) defers to the maps; any other disagreement is an error."""
    side = d.get("x-side")
    if side in ("both", "proxy"):
        return listed
    if side not in SCHEMA_SIDES:
        raise CodegenError(f"{definition} ({method}) has no usable x-side: {side!r}")
    if listed not in (side, "both"):
        raise CodegenError(
            f"{definition} ({method}) has x-side {side!r}, but the method maps list "
            f"{method} for the {listed} side only"
        )
    return str(side)


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
            handled_by = direction(method, params[0], defs[params[0]], side)
            rows.append(
                MethodRow(
                    method, handler, handled_by, kind, params[0], result, gates[method], unstable
                )
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
