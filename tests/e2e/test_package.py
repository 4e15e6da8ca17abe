"""The sdist and the wheel `python -m build` makes (the wheel built from the sdist) have
complete metadata and everything the package needs; tools/release_check.py says so, and
says what is wrong when it is not. (`./run package` also runs `twine check` and the wheel
in a fresh venv; CI runs it.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools import release_check

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_the_built_sdist_and_wheel_pass_the_release_check(dist: Path) -> None:
    assert release_check.check_dist(dist) == []
    wheel = next(dist.glob("*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    # The schema the checker validates against travels in the wheel; tests do not.
    assert "acpstack/conformance/_acp_schema/v1/schema.json" in names
    assert "acpstack/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "vendor/", "tools/"))]


def test_a_wheel_missing_a_file_or_an_extra_is_named(dist: Path, tmp_path: Path) -> None:
    wheel = next(dist.glob("*.whl"))
    broken = tmp_path / wheel.name
    dist_info = f"acpstack-{release_check.project_version()}.dist-info"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "acpstack/conformance/_acp_schema/v2/schema.json":
                continue
            if item.filename == f"{dist_info}/METADATA":
                data = data.replace(b"Provides-Extra: remote\n", b"")
                data = data.replace(
                    b"(https://github.com/acpstack/acpstack/blob/main/docs/cli.md)",
                    b"(docs/cli.md)",
                )
            dst.writestr(item, data)
    shutil.copy(next(dist.glob("*.tar.gz")), tmp_path)
    problems = release_check.check_dist(tmp_path)
    assert "the wheel lacks acpstack/conformance/_acp_schema/v2/schema.json" in problems
    assert "METADATA lacks the extras ['remote']" in problems
    assert "the README links to ['docs/cli.md']: relative links break on PyPI" in problems


def test_the_tag_must_name_the_version_and_have_a_changelog_section(tmp_path: Path) -> None:
    (tmp_path / "src/acpstack").mkdir(parents=True)
    (tmp_path / "src/acpstack/_version.py").write_text('__version__ = "1.2.0"\n')
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n- a change\n")
    assert release_check.check_tag("v1.2.0", tmp_path) == [
        "CHANGELOG.md has no section `## 1.2.0 (YYYY-MM-DD)`"
    ]
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## 1.2.0 (2026-12-01)\n\n- a change\n")
    assert release_check.check_tag("v1.2.0", tmp_path) == []
    assert release_check.check_tag("v1.2", tmp_path) == [
        "tag 'v1.2' does not name the version in _version.py (v1.2.0)"
    ]
    (tmp_path / "src/acpstack/_version.py").write_text('__version__ = "1.2.0-rc1"\n')
    assert "version '1.2.0-rc1' is not in canonical PEP 440 form" in release_check.check_tag(
        "v1.2.0-rc1", tmp_path
    )


def test_the_command_line_reports_each_problem_and_fails(tmp_path: Path) -> None:
    empty = tmp_path / "dist"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools/release_check.py"), "--dist", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "should hold one wheel and one sdist" in done.stderr
    assert done.stdout == ""
