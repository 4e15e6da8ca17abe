"""`python -m tools.codegen vendor PATH`: take a newer schema release into vendor/acp-schema.

PATH has the layout of `vendor/acp-schema/` (README.md, v1/, v2/, frozen-nes/; e.g. a
newer `shared/acp-schema-sdk-X/`, or the `schema/` files of a newer SDK package arranged
that way). The files are copied byte for byte, SHA256SUMS is rewritten, the generated
modules are regenerated, and a summary of what changed is printed (per schema file:
methods added and removed; `$defs` added, removed and changed).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.codegen.generate import VENDOR_DIR
from tools.codegen.methods import GROUPS

SCHEMAS = ("schema.json", "schema.unstable.json")


def _files(root: Path) -> list[Path]:
    return sorted(
        p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.name != "SHA256SUMS"
    )


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _methods(meta: dict[str, Any]) -> set[str]:
    return {m for group, _ in GROUPS for m in meta.get(group, {}).values()}


def summarize(old_root: Path, new_root: Path) -> list[str]:
    """What changed between two schema folders, one line per fact."""
    lines: list[str] = []
    versions = sorted(
        {p.parts[0] for p in _files(new_root) + _files(old_root) if p.name in SCHEMAS}
    )
    for version in versions:
        for schema in SCHEMAS:
            meta = "meta.json" if schema == "schema.json" else "meta.unstable.json"
            where = f"{version}/{schema}"
            old_m = _methods(_load(old_root / version / meta))
            new_m = _methods(_load(new_root / version / meta))
            old_d = _load(old_root / version / schema).get("$defs", {})
            new_d = _load(new_root / version / schema).get("$defs", {})
            facts = [
                ("methods added", sorted(new_m - old_m)),
                ("methods removed", sorted(old_m - new_m)),
                ("$defs added", sorted(new_d.keys() - old_d.keys())),
                ("$defs removed", sorted(old_d.keys() - new_d.keys())),
                (
                    "$defs changed",
                    sorted(n for n in old_d.keys() & new_d.keys() if old_d[n] != new_d[n]),
                ),
            ]
            changed = [(what, names) for what, names in facts if names]
            if not changed:
                lines.append(f"{where}: unchanged")
                continue
            for what, names in changed:
                lines.append(f"{where}: {what} ({len(names)}): {', '.join(names)}")
    return lines


def write_sums(root: Path) -> None:
    lines = [
        f"{hashlib.sha256((root / rel).read_bytes()).hexdigest()}  ./{rel.as_posix()}"
        for rel in _files(root)
    ]
    (root / "SHA256SUMS").write_text("\n".join(lines) + "\n", encoding="utf-8")


def vendor(source: Path, regenerate: Callable[[], int], target: Path = VENDOR_DIR) -> list[str]:
    """Replace `target` with the files of `source` and regenerate; return the change summary.
    If regenerating fails (the generator cannot map something new), the old files are put
    back, so the same command can be run again once the generator knows the new thing."""
    if not (source / "v1" / "schema.json").is_file() or not (source / "v1" / "meta.json").is_file():
        raise SystemExit(
            f"{source} does not look like a schema release (no v1/schema.json, v1/meta.json)"
        )
    staging = target.with_name(target.name + ".new")
    old = target.with_name(target.name + ".old")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns("SHA256SUMS"))
    for path in staging.rglob("*"):
        if path.is_file():
            path.chmod(0o644)  # the source may be read-only
    summary = summarize(target, staging)
    write_sums(staging)
    target.rename(old)
    staging.rename(target)
    try:
        regenerate()
    except BaseException:
        shutil.rmtree(target)
        old.rename(target)
        raise
    shutil.rmtree(old)
    return summary
