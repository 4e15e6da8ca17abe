"""ACP wire types generated from the vendored official JSON Schema.

`acpstack.schema.v1` holds the stable v1 types; `acpstack.schema.v1_unstable` the
unstable superset (opt-in per connection). Absent fields are `UNSET`, distinct from `None`.
The unstable module and its method table load on first use: a stable agent's cold start
does not pay for them.

Frozen extensions keep methods that left the core schema: `v1_nes` (`nes/*` and
`document/*`, frozen at schema v1.21.0, over the unstable types) loads only on a
connection opened with `extensions=("nes",)`; see `method_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from acpstack.schema import _generated_v1 as v1
from acpstack.schema._aliases import needs_normalizing, normalize_params, normalize_result
from acpstack.schema._base import AcpStruct, MethodSpec, UnknownSessionUpdate
from acpstack.schema._generated_methods import STABLE_METHODS

if TYPE_CHECKING:
    from acpstack.schema import _generated_v1_nes as v1_nes
    from acpstack.schema import _generated_v1_unstable as v1_unstable
    from acpstack.schema._generated_methods_unstable import UNSTABLE_METHODS
    from acpstack.schema._lenient import lenient_convert

PROTOCOL_VERSION = 1
EXTENSIONS = ("nes",)
# Spellings of method names some peers send (the Rust conductor and @thinkwell/conductor
# use `_proxy/*`); accepted on input as the official name, never sent.
METHOD_ALIASES = {"_proxy/initialize": "proxy/initialize", "_proxy/successor": "proxy/successor"}

__all__ = [
    "EXTENSIONS",
    "METHOD_ALIASES",
    "PROTOCOL_VERSION",
    "STABLE_METHODS",
    "UNSET",
    "UNSTABLE_METHODS",
    "AcpStruct",
    "MethodSpec",
    "UnknownSessionUpdate",
    "UnsetType",
    "lenient_convert",
    "method_table",
    "needs_normalizing",
    "normalize_params",
    "normalize_result",
    "v1",
    "v1_nes",
    "v1_unstable",
]


def method_table(unstable: bool, extensions: tuple[str, ...] = ()) -> tuple[MethodSpec, ...]:
    """The methods a connection speaks: stable, or unstable (a superset), or with the frozen
    extensions (which build on the unstable methods, so they need `unstable`)."""
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
