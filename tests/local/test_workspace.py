"""Workspace boundary checks against a real directory tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpstack.local import Workspace
from acpstack.wire._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    PERMISSION_DENIED,
    RESOURCE_NOT_FOUND,
    RequestError,
)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    base = tmp_path.resolve()
    ws = base / "ws"
    other = base / "other"
    outside = base / "outside"
    for d in (ws / "src", other, outside):
        d.mkdir(parents=True)
    (ws / "src" / "main.py").write_text("print('hi')\n")
    (other / "notes.md").write_text("notes\n")
    (outside / "secret.txt").write_text("secret\n")
    return {"base": base, "ws": ws, "other": other, "outside": outside}


def denied(ws: Workspace, path: str) -> RequestError:
    with pytest.raises(RequestError) as info:
        ws.check(path)
    assert info.value.code == PERMISSION_DENIED
    assert info.value.data == {"reason": "permission_denied", "path": path}
    return info.value


def test_inside_returns_resolved_path(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    assert ws.roots == (tree["ws"],)
    target = tree["ws"] / "src" / "main.py"
    assert ws.check(str(target)) == target
    assert ws.check(str(tree["ws"])) == tree["ws"]  # the root itself
    assert ws.check(str(tree["ws"] / "src" / ".." / "src" / "main.py")) == target


def test_dotdot_traversal_is_refused(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    denied(ws, str(tree["ws"] / ".." / "outside" / "secret.txt"))
    denied(ws, str(tree["ws"] / "src" / ".." / ".." / "outside" / "secret.txt"))
    # a sibling whose name merely starts with the root's name is outside too
    (tree["base"] / "ws-evil").mkdir()
    denied(ws, str(tree["base"] / "ws-evil" / "x"))


def test_absolute_escape_is_refused(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    denied(ws, "/etc/passwd")
    denied(ws, str(tree["outside"] / "secret.txt"))
    denied(ws, "/")


def test_symlinked_file_pointing_outside_is_refused(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    link = tree["ws"] / "innocent.txt"
    link.symlink_to(tree["outside"] / "secret.txt")
    error = denied(ws, str(link))
    assert str(tree["outside"] / "secret.txt") in error.message
    # a dangling link to a not-yet-existing file outside is refused as well
    dangling = tree["ws"] / "new.txt"
    dangling.symlink_to(tree["outside"] / "created-later.txt")
    denied(ws, str(dangling))


def test_symlink_inside_pointing_inside_is_allowed(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    link = tree["ws"] / "alias.py"
    link.symlink_to(tree["ws"] / "src" / "main.py")
    assert ws.check(str(link)) == tree["ws"] / "src" / "main.py"


def test_symlinked_parent_directory_is_resolved(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    (tree["ws"] / "linkdir").symlink_to(tree["outside"], target_is_directory=True)
    denied(ws, str(tree["ws"] / "linkdir" / "secret.txt"))
    denied(ws, str(tree["ws"] / "linkdir" / "new" / "file.txt"))  # not existing yet


def test_workspace_root_reached_through_a_symlink(tree: dict[str, Path]) -> None:
    alias = tree["base"] / "alias"
    alias.symlink_to(tree["ws"], target_is_directory=True)
    ws = Workspace(str(alias))
    assert ws.roots == (tree["ws"],)
    assert ws.check(str(alias / "src" / "main.py")) == tree["ws"] / "src" / "main.py"
    assert ws.check(str(tree["ws"] / "src" / "main.py")) == tree["ws"] / "src" / "main.py"


def test_relative_path_is_invalid_params(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    for path in ("src/main.py", "./src/main.py", "../outside/secret.txt", ""):
        with pytest.raises(RequestError) as info:
            ws.check(path)
        assert info.value.code == INVALID_PARAMS
        assert "absolute" in info.value.message
        assert info.value.data == {"path": path}


def test_nul_byte_is_invalid_params(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    with pytest.raises(RequestError) as info:
        ws.check(str(tree["ws"]) + "/a\0b")
    assert info.value.code == INVALID_PARAMS


def test_relative_roots_are_refused(tree: dict[str, Path]) -> None:
    with pytest.raises(RequestError) as info:
        Workspace("relative/dir")
    assert info.value.code == INVALID_PARAMS
    with pytest.raises(RequestError):
        Workspace(str(tree["ws"]), ["relative"])


def test_additional_directories(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]), [str(tree["other"])])
    assert ws.roots == (tree["ws"], tree["other"])
    assert ws.check(str(tree["other"] / "notes.md")) == tree["other"] / "notes.md"
    assert ws.check(str(tree["ws"] / "src" / "main.py")) == tree["ws"] / "src" / "main.py"
    denied(ws, str(tree["outside"] / "secret.txt"))
    denied(ws, str(tree["other"] / ".." / "outside" / "secret.txt"))


def test_extra_roots_widen_the_boundary(tree: dict[str, Path]) -> None:
    narrow = Workspace(str(tree["ws"]))
    denied(narrow, str(tree["outside"] / "secret.txt"))
    wide = Workspace(str(tree["ws"]), extra_roots=[str(tree["outside"])])
    assert wide.roots == (tree["ws"], tree["outside"])
    assert wide.check(str(tree["outside"] / "secret.txt")) == tree["outside"] / "secret.txt"
    # the symlink escape becomes legitimate once its target is inside a root
    (tree["ws"] / "innocent.txt").symlink_to(tree["outside"] / "secret.txt")
    assert wide.check(str(tree["ws"] / "innocent.txt")) == tree["outside"] / "secret.txt"
    denied(wide, "/etc/passwd")


def test_duplicate_roots_are_collapsed(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]), [str(tree["ws"]) + "/"], extra_roots=[str(tree["ws"])])
    assert ws.roots == (tree["ws"],)


def test_unrestricted_allows_everything(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]), unrestricted=True)
    assert ws.check("/etc/../etc/passwd") == Path(os.path.realpath("/etc/passwd"))
    assert ws.check(str(tree["outside"] / "secret.txt")) == tree["outside"] / "secret.txt"
    with pytest.raises(RequestError) as info:
        ws.check("relative.txt")  # still has to be absolute
    assert info.value.code == INVALID_PARAMS


def test_non_existent_file_inside(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    new = tree["ws"] / "deep" / "new" / "file.txt"
    assert ws.check(str(new)) == new
    assert ws.check(str(tree["ws"] / "deep" / ".." / "x.txt")) == tree["ws"] / "x.txt"
    # must_exist: a missing file is "not found", an existing one passes
    with pytest.raises(RequestError) as info:
        ws.check(str(new), must_exist=True)
    assert info.value.code == RESOURCE_NOT_FOUND
    assert "not found" in info.value.message and str(new) in info.value.message
    assert ws.check(str(tree["ws"] / "src" / "main.py"), must_exist=True)
    # the boundary wins over existence: outside is denied even if it does not exist
    with pytest.raises(RequestError) as denied_info:
        ws.check(str(tree["outside"] / "missing"), must_exist=True)
    assert denied_info.value.code == PERMISSION_DENIED


def test_symlink_loop_inside_is_a_clear_error(tree: dict[str, Path]) -> None:
    # A loop has no resolved path: checking it fails like opening it would (ELOOP).
    ws = Workspace(str(tree["ws"]))
    (tree["ws"] / "a").symlink_to(tree["ws"] / "b")
    (tree["ws"] / "b").symlink_to(tree["ws"] / "a")
    for path in (tree["ws"] / "a", tree["ws"] / "a" / "x.txt"):
        with pytest.raises(RequestError) as info:
            ws.check(str(path))
        assert info.value.code == INTERNAL_ERROR
        assert "Too many levels of symbolic links" in info.value.message
        assert str(path) in info.value.message
