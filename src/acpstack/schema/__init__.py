"""ACP wire types generated from the vendored official JSON Schema.

`acpstack.schema.v1` holds the stable v1 types; `acpstack.schema.v1_unstable` the
unstable superset (opt-in per connection). Absent fields are `UNSET`, distinct from `None`.
The unstable module and its method table load on first use: a stable agent's cold start
does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from acpstack.schema import _generated_v1 as v1
from acpstack.schema._aliases import needs_normalizing, normalize_params, normalize_result
from acpstack.schema._base import AcpStruct, MethodSpec, UnknownSessionUpdate
from acpstack.schema._generated_methods import STABLE_METHODS

if TYPE_CHECKING:
    from acpstack.schema import _generated_v1_unstable as v1_unstable
    from acpstack.schema._generated_methods_unstable import UNSTABLE_METHODS
    from acpstack.schema._lenient import lenient_convert

PROTOCOL_VERSION = 1

__all__ = [
    "PROTOCOL_VERSION",
    "STABLE_METHODS",
    "UNSET",
    "UNSTABLE_METHODS",
    "AcpStruct",
    "MethodSpec",
    "UnknownSessionUpdate",
    "UnsetType",
    "lenient_convert",
    "needs_normalizing",
    "normalize_params",
    "normalize_result",
    "v1",
    "v1_unstable",
]


def __getattr__(name: str) -> Any:
    if name == "v1_unstable":
        from acpstack.schema import _generated_v1_unstable

        value: Any = _generated_v1_unstable
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
