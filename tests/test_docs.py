"""The documentation's code is real: every Python block compiles, and the complete programs
in it (those that call `asyncio.run`) run as written. The site itself is built with
`mkdocs build --strict` by `./run test`."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts)
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def blocks() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for index, match in enumerate(BLOCK.finditer(page.read_text())):
            code = match.group(1)
            if not code.startswith("--8<--"):  # included from a file that is tested itself
                found.append((f"{page.name}#{index}", code))
    return found


@pytest.mark.parametrize(("where", "code"), blocks(), ids=[w for w, _ in blocks()])
def test_python_blocks_compile(where: str, code: str) -> None:
    # Fragments may `await` at the top level (they stand for the body of an async function).
    compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


RUNNABLE = [(w, c) for w, c in blocks() if "asyncio.run(" in c]


@pytest.mark.parametrize(("where", "code"), RUNNABLE, ids=[w for w, _ in RUNNABLE])
def test_complete_programs_run(where: str, code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_included_files_exist() -> None:
    for page in PAGES:
        for name in re.findall(r'--8<-- "([^"]+)"', page.read_text()):
            assert (ROOT / name).is_file(), f"{page.name} includes {name}"


def test_every_include_line_is_well_formed() -> None:
    # A reformatted marker (`--8 < --"x"`) is not an include: the page shows it as text.
    for page in PAGES:
        for line in page.read_text().splitlines():
            if line.startswith("--8"):
                assert re.fullmatch(r'--8<-- "[^"]+"', line), f"{page.name}: {line!r}"
