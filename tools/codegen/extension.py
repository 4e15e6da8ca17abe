"""A frozen extension: methods that left the core schema, generated from an older snapshot.

`nes/*` and `document/*` left ACP's unstable schema after v1.21.0; `vendor/acp-schema/
frozen-nes/` keeps that snapshot. The extension module holds only what the current
unstable schema lacks:

- the types reachable from the extension's methods that the current schema no longer has;
- "containers" the current schema still has but with fewer properties (the capabilities
  that carried `nes`): generated as subclasses with the retired properties added back;
- the types that refer to a container (`InitializeRequest`, ...), re-declared so that
  they hold the extended container.

Everything else is imported from the current unstable module.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tools.codegen.reading import count_refs
from tools.codegen.tables import ENVELOPE_DEFS


def _closure(defs: dict[str, Any], roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = [r for r in roots if r in defs]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        counter: Counter[str] = Counter()
        count_refs(defs[name], counter)
        todo.extend(n for n in counter if n in defs and n not in seen)
    return seen


def extension_defs(
    frozen: dict[str, Any], current: dict[str, Any], methods: set[str]
) -> tuple[dict[str, Any], set[str]]:
    """The schema to generate the extension from (all $defs, for look-ups) and the names
    the extension module defines itself."""
    fdefs: dict[str, Any] = frozen["$defs"]
    cdefs: dict[str, Any] = current["$defs"]
    roots = {n for n, d in fdefs.items() if d.get("x-method") in methods}
    containers: dict[str, dict[str, Any]] = {}
    for name in sorted(fdefs.keys() & cdefs.keys()):
        if "x-method" in cdefs[name]:
            continue  # a method's own params keep their current shape
        current_props = cdefs[name].get("properties", {})
        extra = {
            k: v for k, v in fdefs[name].get("properties", {}).items() if k not in current_props
        }
        if extra:
            containers[name] = extra
    extra_refs: Counter[str] = Counter()
    count_refs(list(containers.values()), extra_refs)
    retired = {n for n in _closure(fdefs, roots | set(extra_refs)) if n not in cdefs}
    merged = dict(cdefs)
    for name in sorted(retired):
        merged[name] = fdefs[name]
    for name, extra in containers.items():
        merged[name] = dict(cdefs[name], properties={**cdefs[name]["properties"], **extra})
    own = retired | set(containers)
    # Whatever refers to an extended container is re-declared to hold the extended one.
    changed = set(containers)
    while changed:
        referrers = set()
        for name, d in cdefs.items():
            if name in own or name in ENVELOPE_DEFS:
                continue
            counter: Counter[str] = Counter()
            count_refs(d, counter)
            if changed & set(counter):
                referrers.add(name)
        own |= referrers
        changed = referrers
    return {**current, "$defs": merged}, own
