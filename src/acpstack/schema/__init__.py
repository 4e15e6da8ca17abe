"""ACP wire types generated from the vendored official JSON Schema.

`acpstack.schema.v1` holds the stable v1 types; `acpstack.schema.v1_unstable` the
unstable superset (opt-in per connection). Absent fields are `UNSET`, distinct from `None`.
The unstable module and its method table load on first use: a stable agent's cold start
does not pay for them.

Protocol version 2 (a draft upstream) lives beside v1: `v2` and `v2_unstable`, separate
types (never subclasses of v1's), loaded only when a connection negotiates version 2
(`method_table(..., version=2)`).

Frozen extensions keep methods that left the core schema: `v1_nes` (`nes/*` and
`document/*`, frozen at schema v1.21.0, over the unstable types) loads only on a
connection opened with `extensions=("nes",)`; see `method_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from acpstack.schema import _generated_v1 as v1
from acpstack.schema._aliases import (
    needs_normalizing,
    normalize_params,
    normalize_result,
    seed_markers,
)
from acpstack.schema._base import AcpStruct, MethodSpec, UnknownSessionUpdate, convert
from acpstack.schema._generated_methods import STABLE_METHODS

if TYPE_CHECKING:
    from acpstack.schema import _generated_v1_nes as v1_nes
    from acpstack.schema import _generated_v1_unstable as v1_unstable
    from acpstack.schema import _generated_v2 as v2
    from acpstack.schema import _generated_v2_unstable as v2_unstable
    from acpstack.schema._generated_methods_unstable import UNSTABLE_METHODS
    from acpstack.schema._lenient import lenient_convert

PROTOCOL_VERSION = 1
# Every protocol version this library speaks, oldest first (2 is a draft upstream).
PROTOCOL_VERSIONS = (1, 2)
EXTENSIONS = ("nes",)
# Spellings of method names some peers send (the Rust conductor and @thinkwell/conductor
# use `_proxy/*`); accepted on input as the official name, never sent.
METHOD_ALIASES = {"_proxy/initialize": "proxy/initialize", "_proxy/successor": "proxy/successor"}

__all__ = [
    "EXTENSIONS",
    "METHOD_ALIASES",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "STABLE_METHODS",
    "UNSET",
    "UNSTABLE_METHODS",
    "AcpStruct",
    "MethodSpec",
    "UnknownSessionUpdate",
    "UnsetType",
    "convert",
    "lenient_convert",
    "method_table",
    "needs_normalizing",
    "normalize_params",
    "normalize_result",
    "seed_markers",
    "v1",
    "v1_nes",
    "v1_unstable",
    "v2",
    "v2_unstable",
]


def method_table(
    unstable: bool, extensions: tuple[str, ...] = (), version: int = 1
) -> tuple[MethodSpec, ...]:
    """The methods a connection speaks: stable, or unstable (a superset), or with the frozen
    extensions (which build on the unstable methods, so they need `unstable`); of protocol
    `version` 1 or 2 (the frozen extensions exist in version 1 only)."""
    if version == 2:
        if extensions:
            raise ValueError("the frozen ACP extensions exist in protocol version 1 only")
        if unstable:
            from acpstack.schema._generated_methods_v2_unstable import UNSTABLE_METHODS as v2u

            return v2u
        from acpstack.schema._generated_methods_v2 import STABLE_METHODS as v2s

        return v2s
    if version != 1:
        raise ValueError(f"unknown ACP protocol version {version!r} (known: 1, 2)")
    unknown = [e for e in extensions if e not in EXTENSIONS]
    if unknown:
        raise ValueError(f"unknown ACP extension {unknown[0]!r} (known: {', '.join(EXTENSIONS)})")
    if extensions:
        if not unstable:
            raise ValueError("the frozen ACP extensions need unstable=True")
        from acpstack.schema._generated_methods_nes import NES_METHODS

        return NES_METHODS
    if unstable:
        from acpstack.schema._generated_methods_unstable import UNSTABLE_METHODS

        return UNSTABLE_METHODS
    return STABLE_METHODS


def __getattr__(name: str) -> Any:
    if name == "v1_unstable":
        from acpstack.schema import _generated_v1_unstable

        value: Any = _generated_v1_unstable
    elif name == "v2":
        from acpstack.schema import _generated_v2

        value = _generated_v2
    elif name == "v2_unstable":
        from acpstack.schema import _generated_v2_unstable

        value = _generated_v2_unstable
    elif name == "v1_nes":
        from acpstack.schema import _generated_v1_nes

        value = _generated_v1_nes
    elif name == "lenient_convert":  # the slow decoding path loads on first use
        from acpstack.schema._lenient import lenient_convert

        value = lenient_convert
    elif name == "UNSTABLE_METHODS":
        from acpstack.schema._generated_methods_unstable import UNSTABLE_METHODS

        value = UNSTABLE_METHODS
    else:
        raise AttributeError(f"module 'acpstack.schema' has no attribute {name!r}")
    globals()[name] = value
    return value
