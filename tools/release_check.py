"""Checks that a release can be published: `python tools/release_check.py`.

`--tag vX.Y.Z`: the tag names the version in `src/acpstack/_version.py` (a canonical PEP
440 version) and CHANGELOG.md has a section for it. `--dist DIR`: DIR holds one sdist and
one wheel of that version (as `python -m build` leaves them: the wheel built from the
sdist, so a file the sdist lacks is missing from the wheel too), whose metadata is complete
and whose contents are what the package needs at run time. Each problem is one line on
stderr; the exit code is 1 when there is any.

Run by the release workflow (.github/workflows/release.yml), by `./run package` (in CI) and
by tests/e2e/test_package.py. Needs only `packaging` besides the standard library.
"""

from __future__ import annotations

import argparse
import re
import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from packaging.metadata import Metadata
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
NAME = "acpstack"
# The official schema, which the wheel carries (pyproject.toml's force-include).
SCHEMA_DIR = "vendor/acp-schema"
SCHEMA_IN_WHEEL = "acpstack/conformance/_acp_schema"
# What building a wheel from the sdist needs besides src/ and the schema.
SDIST_NEEDS = ("pyproject.toml", "README.md", "LICENSE", "tools/mypyc_build.py")


def project_version(root: Path = ROOT) -> str:
    """The version as written in src/acpstack/_version.py (read, not imported)."""
    text = (root / "src/acpstack/_version.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if match is None:
        raise ValueError('src/acpstack/_version.py has no `__version__ = "..."` line')
    return match.group(1)


def changelog_versions(root: Path = ROOT) -> list[str]:
    """The versions that have a release section (`## X.Y.Z (date)`) in CHANGELOG.md."""
    text = (root / "CHANGELOG.md").read_text()
    return re.findall(r"^## (\d[^\s]*) \(\d{4}-\d{2}-\d{2}\)$", text, re.MULTILINE)


def check_tag(tag: str, root: Path = ROOT) -> list[str]:
    version = project_version(root)
    problems = []
    try:
        if str(Version(version)) != version:
            problems.append(f"version {version!r} is not in canonical PEP 440 form")
    except InvalidVersion:
        problems.append(f"version {version!r} is not a PEP 440 version")
    if tag != f"v{version}":
        problems.append(f"tag {tag!r} does not name the version in _version.py (v{version})")
    if version not in changelog_versions(root):
        problems.append(f"CHANGELOG.md has no section `## {version} (YYYY-MM-DD)`")
    return problems


def _extras(root: Path) -> set[str]:
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    return {str(canonicalize_name(e)) for e in pyproject["project"]["optional-dependencies"]}


def check_metadata(raw: str, root: Path = ROOT) -> list[str]:
    """A wheel's METADATA: valid, with every field an index page shows."""
    try:
        meta = Metadata.from_email(raw, validate=True)
    except Exception as exc:  # ExceptionGroup of InvalidMetadata, or one of them
        return [f"METADATA is not valid: {exc!r}"]
    problems = []
    if meta.name != NAME:
        problems.append(f"METADATA names {meta.name!r}, not {NAME!r}")
    if str(meta.version) != project_version(root):
        problems.append(f"METADATA version {meta.version} is not {project_version(root)}")
    for field in ("summary", "requires_python", "license_expression", "classifiers"):
        if not getattr(meta, field):
            problems.append(f"METADATA has no {field}")
    if not meta.project_urls or not {"Source", "Issues", "Changelog"} <= set(meta.project_urls):
        problems.append("METADATA lacks a Source, Issues or Changelog project URL")
    if meta.description_content_type != "text/markdown" or not meta.description:
        problems.append("METADATA has no Markdown description (the README)")
    relative = re.findall(r"\]\((?!https?://|#|mailto:)([^)\s]+)\)", meta.description or "")
    if relative:
        problems.append(f"the README links to {relative}: relative links break on PyPI")
    missing = _extras(root) - {str(e) for e in meta.provides_extra or []}
    if missing:
        problems.append(f"METADATA lacks the extras {sorted(missing)}")
    if any("License ::" in c for c in meta.classifiers or []):
        problems.append("a License classifier beside License-Expression (PEP 639 forbids it)")
    return problems


def check_wheel(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        dist_info = f"{NAME}-{project_version(root)}.dist-info"
        problems += check_metadata(whl.read(f"{dist_info}/METADATA").decode(), root)
        entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
        if not re.search(rf"^{NAME} = acpstack\.cli:main$", entry_points, re.MULTILINE):
            problems.append("the wheel has no `acpstack` console script")
    expected = {
        p.relative_to(root / "src").as_posix()
        for p in (root / "src" / NAME).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    expected |= {
        f"{SCHEMA_IN_WHEEL}/{p.relative_to(root / SCHEMA_DIR).as_posix()}"
        for p in (root / SCHEMA_DIR).rglob("*")
        if p.is_file()
    }
    for name in sorted(expected - names):
        problems.append(f"the wheel lacks {name}")
    return problems


def check_sdist(path: Path, root: Path = ROOT) -> list[str]:
    prefix = f"{NAME}-{project_version(root)}/"
    with tarfile.open(path) as sdist:
        names = {n.removeprefix(prefix) for n in sdist.getnames()}
        pkg_info = sdist.extractfile(prefix + "PKG-INFO")
        headers = HeaderParser().parsestr(pkg_info.read().decode() if pkg_info else "")
    problems = [f"the sdist lacks {need}" for need in SDIST_NEEDS if need not in names]
    schema = [
        f"{SCHEMA_DIR}/{p.relative_to(root / SCHEMA_DIR).as_posix()}"
        for p in (root / SCHEMA_DIR).rglob("*")
        if p.is_file()
    ]
    problems += [f"the sdist lacks {name}" for name in schema if name not in names]
    if headers["Version"] != project_version(root):
        problems.append(f"the sdist's PKG-INFO version is {headers['Version']!r}")
    return problems


def check_dist(dist: Path, root: Path = ROOT) -> list[str]:
    version = project_version(root)
    wheels = sorted(dist.glob(f"{NAME}-{version}-*.whl"))
    sdists = sorted(dist.glob(f"{NAME}-{version}.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        return [f"{dist} should hold one wheel and one sdist of {version}: {wheels + sdists}"]
    return check_sdist(sdists[0], root) + check_wheel(wheels[0], root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tag", help="the tag being released, vX.Y.Z")
    parser.add_argument("--dist", type=Path, help="the directory `python -m build` wrote")
    args = parser.parse_args(argv)
    if not args.tag and not args.dist:
        parser.error("give --tag, --dist or both")
    problems = (check_tag(args.tag) if args.tag else []) + (
        check_dist(args.dist) if args.dist else []
    )
    for problem in problems:
        print(f"release check: {problem}", file=sys.stderr)
    if not problems:
        print(f"release check: {NAME} {project_version()} is ready")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
