"""What the race-free walk allows and refuses, without an attacker: real files, symlinks.

The races themselves are in test_races.py; this file pins the semantics the walk keeps
from the resolve-then-open code it replaced (and the few places it is stricter).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from acpstack.local import FileSystem, Location, Workspace
from acpstack.wire._errors import (
    INVALID_PARAMS,
    PERMISSION_DENIED,
    RESOURCE_NOT_FOUND,
    RequestError,
)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    base = tmp_path.resolve()
    ws, other, outside = base / "ws", base / "other", base / "outside"
    for d in (ws / "src", other, outside):
        d.mkdir(parents=True)
    (ws / "src" / "main.py").write_text("print('hi')\n")
    (outside / "secret.txt").write_text("secret\n")
    return {"base": base, "ws": ws, "other": other, "outside": outside}


def listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


async def refused(coro: object) -> RequestError:
    with pytest.raises(RequestError) as info:
        await coro  # type: ignore[misc]
    return info.value


def test_locate_hands_out_the_directory_and_the_name(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]))
    with ws.locate(str(tree["ws"] / "src" / "main.py")) as location:
        assert isinstance(location, Location)
        assert (location.name, location.path) == ("main.py", tree["ws"] / "src" / "main.py")
        info = os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False)
        assert stat.S_ISREG(info.st_mode)
        fd = location.dir_fd
    assert location.dir_fd == -1
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    # the directory itself: its parent's descriptor is not needed, the name is "."
    with ws.locate(str(tree["ws"] / "src" / "..")) as location:
        assert (location.name, location.path) == (".", tree["ws"])
    # a missing directory is an OSError naming the resolved path, unless create=True
    with pytest.raises(FileNotFoundError) as info:
        ws.locate(str(tree["ws"] / "new" / "x.txt"))
    assert info.value.filename == str(tree["ws"] / "new" / "x.txt")
    with ws.locate(str(tree["ws"] / "new" / "deeper" / "x.txt"), create=True) as location:
        assert location.path == tree["ws"] / "new" / "deeper" / "x.txt"
    assert (tree["ws"] / "new" / "deeper").is_dir()


async def test_writing_through_a_symlink_inside_replaces_its_target(tree: dict[str, Path]) -> None:
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    link = tree["ws"] / "alias.py"
    link.symlink_to("src/main.py")  # relative
    await fs.write_text_file(ws, link, "x = 1\n")
    assert link.is_symlink() and os.readlink(link) == "src/main.py"
    assert (tree["ws"] / "src" / "main.py").read_text() == "x = 1\n"
    # through a symlinked directory that stays inside, into a directory it creates
    (tree["ws"] / "srclink").symlink_to(tree["ws"] / "src", target_is_directory=True)
    await fs.write_text_file(ws, tree["ws"] / "srclink" / "pkg" / "mod.py", "y = 2\n")
    assert (tree["ws"] / "src" / "pkg" / "mod.py").read_text() == "y = 2\n"


async def test_writes_through_symlinks_to_outside_create_nothing(tree: dict[str, Path]) -> None:
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    (tree["ws"] / "out").symlink_to(tree["outside"], target_is_directory=True)
    (tree["ws"] / "secret.txt").symlink_to(tree["outside"] / "secret.txt")
    (tree["ws"] / "dangling.txt").symlink_to(tree["outside"] / "new.txt")
    before = listing(tree["outside"])
    for path in (
        tree["ws"] / "out" / "x.txt",
        tree["ws"] / "out" / "new" / "dir" / "x.txt",
        tree["ws"] / "secret.txt",
        tree["ws"] / "dangling.txt",
        tree["ws"] / "src" / ".." / ".." / "outside" / "y.txt",
    ):
        error = await refused(fs.write_text_file(ws, path, "pwned"))
        assert error.code == PERMISSION_DENIED, path
    assert listing(tree["outside"]) == before
    assert (tree["outside"] / "secret.txt").read_text() == "secret\n"


async def test_missing_directories_then_dotdot_are_not_created(tree: dict[str, Path]) -> None:
    # realpath semantics: "deep/.." is nothing; only the real parents are created
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    await fs.write_text_file(ws, str(tree["ws"] / "deep" / ".." / "x.txt"), "x")
    assert (tree["ws"] / "x.txt").read_text() == "x"
    assert not (tree["ws"] / "deep").exists()


async def test_symlink_from_one_root_into_another(tree: dict[str, Path]) -> None:
    ws = Workspace(str(tree["ws"]), [str(tree["other"])])
    fs = FileSystem()
    (tree["ws"] / "notes").symlink_to(tree["other"], target_is_directory=True)
    await fs.write_text_file(ws, tree["ws"] / "notes" / "todo.md", "- a\n")
    assert (tree["other"] / "todo.md").read_text() == "- a\n"
    assert await fs.read_text_file(ws, tree["ws"] / "notes" / "todo.md") == "- a\n"


async def test_unrestricted_reads_and_writes_anywhere(tree: dict[str, Path]) -> None:
    ws, fs = Workspace(str(tree["ws"]), unrestricted=True), FileSystem()
    assert await fs.read_text_file(ws, tree["outside"] / "secret.txt") == "secret\n"
    (tree["ws"] / "link").symlink_to(tree["outside"] / "secret.txt")
    await fs.write_text_file(ws, tree["ws"] / "link", "changed\n")
    assert (tree["outside"] / "secret.txt").read_text() == "changed\n"


async def test_a_replaced_root_is_refused(tree: dict[str, Path]) -> None:
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    assert await fs.read_text_file(ws, tree["ws"] / "src" / "main.py") == "print('hi')\n"
    # Someone renames the workspace away and moves another directory to its path.
    tree["ws"].rename(tree["base"] / "ws-away")
    (tree["outside"] / "src").mkdir()
    (tree["outside"] / "src" / "main.py").write_text("not the workspace\n")
    tree["outside"].rename(tree["ws"])
    error = await refused(fs.read_text_file(ws, tree["ws"] / "src" / "main.py"))
    assert error.code == PERMISSION_DENIED and "was replaced" in error.message
    error = await refused(fs.write_text_file(ws, tree["ws"] / "new.txt", "x"))
    assert error.code == PERMISSION_DENIED
    assert not (tree["ws"] / "new.txt").exists()
    # Put back, it is the workspace again.
    tree["ws"].rename(tree["base"] / "outside")
    (tree["base"] / "ws-away").rename(tree["ws"])
    assert await fs.read_text_file(ws, tree["ws"] / "src" / "main.py") == "print('hi')\n"


async def test_a_root_created_later_is_pinned_when_first_seen(tree: dict[str, Path]) -> None:
    later = tree["base"] / "later"
    ws, fs = Workspace(str(later)), FileSystem()
    error = await refused(fs.read_text_file(ws, later / "a.txt"))
    assert error.code == RESOURCE_NOT_FOUND
    await fs.write_text_file(ws, later / "a.txt", "a")  # creates the root itself
    assert (later / "a.txt").read_text() == "a"
    # ...but never what is above a root
    deeper = Workspace(str(tree["base"] / "missing" / "ws"))
    error = await refused(
        fs.write_text_file(deeper, tree["base"] / "missing" / "ws" / "a.txt", "a")
    )
    assert error.code == PERMISSION_DENIED
    assert not (tree["base"] / "missing").exists()


async def test_bad_paths_are_invalid_params(tree: dict[str, Path]) -> None:
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    for path in ("relative.txt", "", str(tree["ws"]) + "/a\0b"):
        for coro in (fs.read_text_file(ws, path), fs.write_text_file(ws, path, "x")):
            error = await refused(coro)
            assert error.code == INVALID_PARAMS, path
    assert listing(tree["ws"]) == ["src", "src/main.py"]


async def test_no_descriptor_is_leaked(tree: dict[str, Path]) -> None:
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    (tree["ws"] / "loop").symlink_to("loop")
    (tree["ws"] / "out").symlink_to(tree["outside"], target_is_directory=True)

    async def everything() -> None:
        await fs.read_text_file(ws, tree["ws"] / "src" / "main.py")
        await fs.write_text_file(ws, tree["ws"] / "a" / "b" / "c.txt", "c")
        for bad in ("loop", "out/secret.txt", "missing/x", "src/main.py/x"):
            with pytest.raises(RequestError):
                await fs.read_text_file(ws, tree["ws"] / bad)
            if bad != "missing/x":  # a write creates "missing"
                with pytest.raises(RequestError):
                    await fs.write_text_file(ws, tree["ws"] / bad, "x")
        ws.check(str(tree["ws"] / "src" / "main.py"))

    await everything()  # warm up (thread pool, imports)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        await everything()
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_a_directory_that_can_be_searched_but_not_listed(tree: dict[str, Path]) -> None:
    # Like open(2): only search (x) permission is needed on the directories of a path.
    ws, fs = Workspace(str(tree["ws"])), FileSystem()
    hidden = tree["ws"] / "hidden"
    hidden.mkdir()
    (hidden / "known.txt").write_text("found\n")
    hidden.chmod(0o311)
    try:
        assert await fs.read_text_file(ws, hidden / "known.txt") == "found\n"
        await fs.write_text_file(ws, hidden / "known.txt", "rewritten\n")
        assert await fs.read_text_file(ws, hidden / "known.txt") == "rewritten\n"
    finally:
        hidden.chmod(0o755)
