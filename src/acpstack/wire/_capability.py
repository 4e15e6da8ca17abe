"""Capability gates: `CapabilityError`, and `capability_allows`, which reads a gate path
on advertised capabilities. In a module of its own: mypyc cannot compile a class built on
RuntimeError, so this one stays interpreted when the rest of `wire/` is compiled (the gate
check runs once per method and connection: the answer is remembered)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET


class CapabilityError(RuntimeError):
    """Raised instead of sending a call the peer did not advertise (or before initialize)."""


def capability_allows(caps: Any, gate: tuple[str, ...] | None) -> bool:
    """Walk a gate path on an advertised capabilities struct: absent/null/false = no."""
    if gate is None:
        return True
    obj = caps
    for name in gate:
        obj = getattr(obj, name, UNSET)
        if obj is UNSET or obj is None or obj is False:
            return False
    return True
