"""The registry of cases: each case module adds its cases with `@case(...)`."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from acpstack.conformance._model import Case, CaseFunction, Level, Rule

GROUPS = (
    "negotiation",
    "handshake",
    "sessions",
    "prompt",
    "cancel",
    "v2",
    "robustness",
    "unstable",
    "proxy",
    "wire",
)
"""The case groups, in run order; the cases of a group share one agent process."""
_MODULES = (
    "_cases_negotiation",
    "_cases_handshake",
    "_cases_sessions",
    "_cases_prompt",
    "_cases_v2",
    "_cases_robust",
    "_cases_unstable",
    "_cases_proxy",
    "_cases_wire",
)
_CASES: dict[str, Case] = {}


def case(
    id: str,
    title: str,
    *,
    group: str,
    rule: str,
    source: str,
    level: Level,
    expected: str,
    fix: str,
    unstable: bool = False,
    stdio_only: bool = False,
) -> Callable[[CaseFunction], CaseFunction]:
    """Register the decorated coroutine function as the case `id`. `level` says how
    binding `rule` is: only a MUST or schema rule can fail a check (see `Level`)."""
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}")

    def register(function: CaseFunction) -> CaseFunction:
        if id in _CASES:
            raise ValueError(f"duplicate case id {id!r}")
        _CASES[id] = Case(
            id,
            title,
            group,
            Rule(rule, source, level),
            expected,
            fix,
            function,
            unstable,
            stdio_only,
        )
        return function

    return register


def all_cases() -> list[Case]:
    """Every case, in run order (by group, then as written)."""
    for module in _MODULES:
        importlib.import_module(f"acpstack.conformance.{module}")
    return sorted(_CASES.values(), key=lambda c: GROUPS.index(c.group))
