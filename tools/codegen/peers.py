"""Typed peers and handler stubs, generated from the method table (as lsprotocol/pygls do).

For each side: a `...Methods` class with one typed call per method the *other* side
handles (the base of `ClientPeer` / `AgentPeer`), and a `...Handlers` class with one
typed stub per method this side handles (the base of `Agent` / `Client`). The hand-written
subclasses add behaviour only (helpers, checks); `HAND_WRITTEN` lists the calls whose
signature they change, which the generated base leaves out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tools.codegen.methods import MethodRow

UNSTABLE_NOTE = re.compile(
    r"\*\*UNSTABLE\*\*\s*(This capability is not part of the spec yet, and may be removed or "
    r"changed at any point\.)?\s*",
)
# Calls whose hand-written form has another signature (see agent/_agent.py).
HAND_WRITTEN = {"client": {"session/update"}, "agent": set()}
MODULES = {"stable": "acp", "unstable": "acpu", "nes": "nes"}
IMPORTS = {
    "stable": "from acpstack.schema import v1 as acp",
    "unstable": "from acpstack.schema import v1_unstable as acpu",
    "nes": "from acpstack.schema import v1_nes as nes",
}


@dataclass
class PeerMethod:
    row: MethodRow
    group: str  # stable, unstable, nes
    name: str  # the Python method name
    doc: str
    params_optional: bool  # the params have no required field: `params=None` is allowed


def docstring(text: str, indent: str) -> list[str]:
    body = text.replace("\\", "\\\\").replace('"""', "'''").strip()
    lines = body.splitlines() or [""]
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}" if line.strip() else "" for line in lines[1:]]
    out.append(f'{indent}"""')
    return out


def describe(row: MethodRow, group: str, defs: dict[str, Any], side_of: str) -> str:
    """The method's documentation: its params' description, then where it may be used."""
    text = UNSTABLE_NOTE.sub("", defs[row.params].get("description", "")).strip()
    kind = "request" if row.kind == "request" else "notification"
    lines = [f"`{row.name}` {kind}." + (f" {text}" if text else "")]
    if group == "unstable":
        lines.append(
            "\nUnstable: only on connections opened with `unstable=True` (it may change or go)."
        )
    elif group == "nes":
        lines.append('\nFrozen extension: only on connections opened with `extensions=("nes",)`.')
    if row.gate:
        path = ".".join(re.sub(r"_([a-z])", lambda m: m[1].upper(), g) for g in row.gate)
        lines.append(f"\nNeeds the {side_of} to advertise `{path}`.")
    return "\n".join(lines)


def required_fields(defs: dict[str, Any], name: str) -> set[str]:
    d = defs[name]
    for part in d.get("allOf", []):
        ref = part.get("$ref", "")
        if ref.startswith("#/$defs/") and "properties" not in d:
            return required_fields(defs, ref[len("#/$defs/") :])
    return set(d.get("required", []))


def collect(
    rows: list[MethodRow], groups: dict[str, str], defs: dict[str, Any]
) -> list[PeerMethod]:
    methods = []
    for row in rows:
        if row.side == "protocol":
            continue  # `$/cancel_request`: sent and handled by the runtime itself
        optional = not required_fields(defs, row.params)
        methods.append(PeerMethod(row, groups[row.name], row.handler, "", optional))
    return methods


def _type(m: PeerMethod, name: str | None) -> str:
    return "None" if name is None else f"{MODULES[m.group]}.{name}"


def emit_call(m: PeerMethod, side_of: str, defs: dict[str, Any]) -> list[str]:
    p = _type(m, m.row.params)
    sig = f"params: {p} | None = None" if m.params_optional else f"params: {p}"
    doc = docstring(describe(m.row, m.group, defs, side_of), "        ")
    out = []
    if m.row.kind == "request":
        r = _type(m, m.row.result)
        out.append(f"    async def {m.name}(self, {sig}, *, timeout: float | None = None) -> {r}:")
    else:
        out.append(f"    async def {m.name}(self, {sig}) -> None:")
    out += doc
    if m.group != "stable":
        out.append(f"        self._check_group({m.row.name!r}, {m.group!r})")
    if m.params_optional:
        if m.group != "stable":
            out.append(f"        {IMPORTS[m.group].strip()}")
            out.append("")
        out.append("        if params is None:")
        out.append(f"            params = {p}()")
    if m.row.kind == "request":
        out.append(
            f"        result: {_type(m, m.row.result)} = await self.connection.request("
            f"{m.row.name!r}, params, timeout=timeout)"
        )
        out.append("        return result")
    else:
        out.append(f"        await self.connection.notify({m.row.name!r}, params)")
    out.append("")
    return out


def emit_stub(m: PeerMethod, defs: dict[str, Any]) -> list[str]:
    p = _type(m, m.row.params)
    text = describe(m.row, m.group, defs, "this side")
    if m.row.kind == "request":
        text += "\n\nNot overridden: answers -32601 (Method not found)."
        out = [f"    async def {m.name}(self, params: {p}) -> {_type(m, m.row.result)}:"]
        out += docstring(text, "        ")
        out.append(f"        raise RequestError.method_not_found({m.row.name!r})")
    else:
        text += "\n\nNot overridden: ignored."
        out = [f"    async def {m.name}(self, params: {p}) -> None:"]
        out += docstring(text, "        ")
        out.append(f'        log.debug("ignored %s", {m.row.name!r})')
    out.append("")
    return out


CHECK_GROUP = '''
    def _check_group(self, method: str, group: str) -> None:
        """Unstable and extension methods exist only on connections that enabled them."""
        if not self.connection.unstable:
            raise CapabilityError(
                f"{method} is an unstable ACP method: this connection did not enable unstable "
                "features (connect with unstable=True on both sides)"
            )
        if group == "unstable":
            return
        if group not in self.extensions:
            raise CapabilityError(
                f"{method} belongs to the frozen {group!r} extension: connect with "
                f"unstable=True and extensions=({group!r},)"
            )
'''


def emit_side(
    side: str, other: str, methods: list[PeerMethod], defs: dict[str, Any], header: str
) -> str:
    """The generated module of one side (`side` = "agent": ClientPeerMethods + AgentHandlers)."""
    peer_cls = "ClientPeerMethods" if side == "agent" else "AgentPeerMethods"
    handler_cls = "AgentHandlers" if side == "agent" else "ClientHandlers"
    calls = [
        m
        for m in methods
        if m.row.side in (other, "both") and m.row.name not in HAND_WRITTEN[other]
    ]
    stubs = [m for m in methods if m.row.side in (side, "both")]
    out = [header, "", "from __future__ import annotations", ""]
    out += ["import logging", "from typing import TYPE_CHECKING", ""]
    out += ["from acpstack.schema import v1 as acp", "from acpstack.wire import CapabilityError"]
    out += ["from acpstack.wire import RequestError", "", "if TYPE_CHECKING:"]
    out += ["    from acpstack.rpc import Connection"]
    out += [f"    {IMPORTS[g]}" for g in ("unstable", "nes")]
    out += ["", f"__all__ = [{handler_cls!r}, {peer_cls!r}]", ""]
    out += [f'log = logging.getLogger("acpstack.{side}")', "", ""]
    out.append(f"class {peer_cls}:")
    out += docstring(
        f"Typed calls to the {other}: one per method the {other} handles (from the method "
        "table).\n\nThe runtime checks each call against what the peer advertised and "
        "raises `CapabilityError` instead of sending what it did not allow.",
        "    ",
    )
    out += ["", "    connection: Connection", "    extensions: tuple[str, ...] = ()", ""]
    out += CHECK_GROUP.splitlines()[1:] + [""]
    for m in calls:
        out += emit_call(m, other, defs)
    out += ["", f"class {handler_cls}:"]
    out += docstring(
        f"Typed handler stubs: one per method the {side} handles (from the method table). "
        "Override the ones you support.",
        "    ",
    )
    out.append("")
    for m in stubs:
        out += emit_stub(m, defs)
    return "\n".join(out)
