"""`python -m tools.codegen vendor PATH`: take a newer schema release into vendor/acp-schema.

PATH is a schema release in one of two layouts:

- upstream's: the `schema/` folder of agentclientprotocol/agent-client-protocol at a release
  tag (or the checkout holding it), with `v1/` and `v2/` each holding `schema.json`,
  `schema.unstable.json`, `meta.json` and `meta.unstable.json` (its `CHANGELOG.md`,
  `Cargo.toml` and other files are not vendored);
- ours: the same plus `README.md` and `frozen-nes/` (e.g. `../shared/acp-schema-sdk-X/`).

The schema files are copied byte for byte. What the release does not have is kept from the
current copy: `frozen-nes/` (the frozen `nes/*` and `document/*` extension, see
`EXTENSIONS` in generate.py) and `README.md` (whose versions and dates are then to be
updated by hand). SHA256SUMS is rewritten, the generated modules are regenerated, and a
summary of what changed is printed (per schema file: methods added and removed; `$defs`
added, removed and changed). Anything wrong (not a release, a missing or unreadable file, a
schema the generator cannot map yet) is a one-line error, and the current copy is left as it
was, so the same command can be run again once the generator knows the new thing.
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
VERSIONS = ("v1", "v2")
# The files a release must have, relative to its root.
REQUIRED = tuple(
    f"{version}/{name}"
    for version in VERSIONS
    for name in ("schema.json", "schema.unstable.json", "meta.json", "meta.unstable.json")
)
# Ours, kept from the current copy when the release has none.
KEPT = ("README.md", "frozen-nes")


class VendorError(Exception):
    """A release that cannot be vendored; the message says why."""


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


def release_root(path: Path) -> Path:
    """The folder holding `v1/` and `v2/`: PATH itself, or its `schema/` (upstream's
    checkout or release archive)."""
    if not path.is_dir():
        raise VendorError(f"{path} is not a folder")
    for root in (path, path / "schema"):
        if (root / "v1").is_dir():
            return root
    raise VendorError(
        f"{path} does not look like a schema release: no v1/ (nor schema/v1/) folder in it"
    )


def check_release(root: Path) -> None:
    """Every required file is there and is JSON (an SDK package has the schemas but not the
    method maps: those come from upstream's release, see vendor/acp-schema/README.md)."""
    missing = [rel for rel in REQUIRED if not (root / rel).is_file()]
    if missing:
        raise VendorError(f"{root} is not a complete schema release: missing {', '.join(missing)}")
    for rel in REQUIRED:
        try:
            json.loads((root / rel).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise VendorError(f"{root / rel} is not valid JSON: {exc}") from None


def stage(root: Path, staging: Path, current: Path) -> list[str]:
    """Copy the release's files into `staging`, keeping ours it lacks; return notes."""
    notes = []
    for rel in REQUIRED:
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, staging / rel)
    for name in KEPT:
        source, origin = root / name, "the release"
        if not source.exists():
            source, origin = current / name, "the current copy (the release has none)"
            if not source.exists():
                continue
        if source.is_dir():
            shutil.copytree(source, staging / name, ignore=shutil.ignore_patterns("SHA256SUMS"))
        else:
            shutil.copyfile(source, staging / name)
        if origin != "the release":
            notes.append(f"{name}: kept from {origin}")
    if not (root / "README.md").exists() and (staging / "README.md").exists():
        notes.append("README.md: update the versions and dates it names to the new release")
    skipped = sorted(
        rel.as_posix()
        for rel in _files(root)
        if rel.as_posix() not in REQUIRED and rel.parts[0] not in KEPT
    )
    if skipped:
        notes.append(f"not vendored (not schema files): {', '.join(skipped)}")
    for path in staging.rglob("*"):
        if path.is_file():
            path.chmod(0o644)  # the source may be read-only
    return notes


def vendor(source: Path, regenerate: Callable[[], int], target: Path = VENDOR_DIR) -> list[str]:
    """Replace `target` with the files of the release at `source` and regenerate; return the
    notes on what was kept, then the change summary. If regenerating fails (the generator
    cannot map something new), the old files are put back and the error propagates."""
    root = release_root(source)
    check_release(root)
    staging = target.with_name(target.name + ".new")
    old = target.with_name(target.name + ".old")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    try:
        notes = stage(root, staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
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
    return notes + summary
