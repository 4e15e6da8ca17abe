"""DESIGN.md: cancellation is never swallowed. Checked on the source: no `suppress` of
CancelledError or BaseException, and every `except` that catches CancelledError or
BaseException (or everything) raises again somewhere in its body. Ending a task we own goes
through `acpstack._tasks.cancel_and_wait` (its behaviour: tests/core/test_cancel_and_wait.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import acpstack

PACKAGE = Path(acpstack.__file__).resolve().parent
SWALLOWING = {"CancelledError", "BaseException", "BaseExceptionGroup"}
# Modules that step coroutines themselves, as asyncio's Task does: a cancellation caught
# there is delivered into the coroutine it belongs to (or ends it), never dropped.
STEPS_COROUTINES = {"rpc/_eager.py"}


def _names(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"BaseException"}  # a bare `except:`
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return {p.attr if isinstance(p, ast.Attribute) else getattr(p, "id", "") for p in parts}


def problems_in(tree: ast.AST, where: str) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "suppress":
            caught = set().union(*(_names(arg) for arg in node.args)) if node.args else set()
            if caught & SWALLOWING:
                found.append(f"{where}:{node.lineno} suppress({', '.join(sorted(caught))})")
        if isinstance(node, ast.ExceptHandler) and _names(node.type) & SWALLOWING:
            if not any(isinstance(inner, ast.Raise) for inner in ast.walk(node)):
                found.append(f"{where}:{node.lineno} except without raise")
    return found


def test_no_cancellation_is_swallowed_in_the_library() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where not in STEPS_COROUTINES:
            problems += problems_in(ast.parse(path.read_text()), where)
    assert problems == []


def test_the_check_sees_each_way_to_swallow() -> None:
    code = """
async def f(task):
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    try:
        await task
    except BaseException:
        return None
    try:
        await task
    except:
        pass
    try:
        await task
    except asyncio.CancelledError:
        raise
"""
    assert sorted(p.split(" ", 1)[1] for p in problems_in(ast.parse(code), "f")) == [
        "except without raise",
        "except without raise",
        "suppress(CancelledError, Exception)",
    ]
