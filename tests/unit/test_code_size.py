"""Functions that read in one go: no hand-written function over 80 lines. (Modules have no
line limit: their size follows what belongs together.)

Generated modules (`_generated*.py`) are not written by hand and are not measured. An
offender that cannot be split yet is allowed by name with the reason next to it; the goal is
an empty list, and an entry that no longer offends must leave it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import acpstack

PACKAGE = Path(acpstack.__file__).resolve().parent
MAX_FUNCTION_LINES = 80

# "path relative to src/acpstack" for a module, "path::qualified.name" for a function.
ALLOWED: dict[str, str] = {}


def measure(path: Path, name: str) -> list[tuple[str, int, int]]:
    """(what, lines, limit) for each part of the source at `path` that is over its limit;
    `name` is how the module is named in the result."""
    source = path.read_text(encoding="utf-8")
    over: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                length = child.end_lineno - child.lineno + 1  # from `def` to its last line
                if length > MAX_FUNCTION_LINES:
                    over.append((f"{name}::{prefix}{child.name}", length, MAX_FUNCTION_LINES))
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, str(path)), "")
    return over


def offenders() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name.startswith("_generated"):
            continue
        for what, lines, limit in measure(path, path.relative_to(PACKAGE).as_posix()):
            found[what] = f"{lines} lines (limit {limit})"
    return found


def test_no_module_or_function_is_over_its_limit() -> None:
    assert {what: size for what, size in offenders().items() if what not in ALLOWED} == {}


def test_every_allowed_offender_still_offends_and_says_why() -> None:
    # A module that got split leaves the list, so the list cannot hide a new offender.
    found = offenders()
    assert [what for what in ALLOWED if what not in found] == []
    assert all(reason.strip() for reason in ALLOWED.values())


def _function(header: str, body_lines: int, indent: int) -> str:
    pad = "    " * indent
    return "\n".join([pad + header] + [f"{pad}    v{i} = {i}" for i in range(body_lines)])


def test_the_measure_sees_long_functions_at_any_depth(tmp_path: Path) -> None:
    limit = MAX_FUNCTION_LINES
    source = "\n".join(
        [
            _function("def exactly_at_the_limit():", limit - 1, 0),
            "class Outer:",
            "    class Inner:",
            _function("async def long(self):", limit, 2),
            "def outer():",
            _function("def nested():", limit, 1),
        ]
    )
    lines = source.splitlines()
    lines += ["# padding"] * 600  # a long module is fine
    path = tmp_path / "m.py"
    path.write_text("\n".join(lines) + "\n")
    assert measure(path, "m.py") == [
        ("m.py::Outer.Inner.long", limit + 1, limit),
        ("m.py::outer", limit + 2, limit),
        ("m.py::outer.nested", limit + 1, limit),
    ]
