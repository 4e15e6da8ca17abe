"""FileSystem against real files in a temp directory (and a real SIGKILLed writer)."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
from pathlib import Path

import pytest

from acpstack.local import TEMP_MARKER, FileSystem, Workspace
from acpstack.wire._errors import (
    INVALID_PARAMS,
    PERMISSION_DENIED,
    RESOURCE_NOT_FOUND,
    RequestError,
)

HELPERS = Path(__file__).parent / "helpers"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
def ws(base: Path) -> Workspace:
    return Workspace(str(base))


def temp_files(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if TEMP_MARKER in name]


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- reading: line / limit ------------------------------------------------------------


async def test_line_and_limit_edges(base: Path, ws: Workspace) -> None:
    path = base / "five.txt"
    path.write_bytes(b"one\ntwo\nthree\nfour\nfive\n")
    fs = FileSystem()
    whole = "one\ntwo\nthree\nfour\nfive\n"
    assert await fs.read_text_file(ws, path) == whole
    assert await fs.read_text_file(ws, path, line=1) == whole
    assert await fs.read_text_file(ws, path, line=0) == whole  # 0 is treated like 1
    assert await fs.read_text_file(ws, path, line=0, limit=2) == "one\ntwo\n"
    assert await fs.read_text_file(ws, path, line=2, limit=2) == "two\nthree\n"
    assert await fs.read_text_file(ws, path, line=5) == "five\n"
    assert await fs.read_text_file(ws, path, line=5, limit=10) == "five\n"
    assert await fs.read_text_file(ws, path, line=6) == ""  # past the end
    assert await fs.read_text_file(ws, path, line=100, limit=3) == ""
    assert await fs.read_text_file(ws, path, limit=0) == ""  # decided: limit 0 -> ""
    assert await fs.read_text_file(ws, path, line=3, limit=0) == ""
    assert await fs.read_text_file(ws, path, limit=1) == "one\n"
    assert await fs.read_text_file(ws, path, limit=99) == whole


async def test_negative_line_or_limit_is_invalid(base: Path, ws: Workspace) -> None:
    path = base / "f.txt"
    path.write_text("x\n")
    fs = FileSystem()
    for kwargs in ({"line": -1}, {"limit": -1}):
        with pytest.raises(RequestError) as info:
            await fs.read_text_file(ws, path, **kwargs)
        assert info.value.code == INVALID_PARAMS


async def test_empty_file(base: Path, ws: Workspace) -> None:
    path = base / "empty.txt"
    path.write_bytes(b"")
    fs = FileSystem()
    assert await fs.read_text_file(ws, path) == ""
    assert await fs.read_text_file(ws, path, line=1, limit=1) == ""
    assert await fs.read_text_file(ws, path, line=2) == ""


async def test_crlf_is_kept(base: Path, ws: Workspace) -> None:
    path = base / "crlf.txt"
    path.write_bytes(b"a\r\nb\r\nc\r\n")
    fs = FileSystem()
    assert await fs.read_text_file(ws, path) == "a\r\nb\r\nc\r\n"
    assert await fs.read_text_file(ws, path, line=2, limit=1) == "b\r\n"
    assert await fs.read_text_file(ws, path, line=3) == "c\r\n"


async def test_no_trailing_newline(base: Path, ws: Workspace) -> None:
    path = base / "no-eol.txt"
    path.write_bytes(b"first\nlast")
    fs = FileSystem()
    assert await fs.read_text_file(ws, path) == "first\nlast"
    assert await fs.read_text_file(ws, path, line=2) == "last"
    assert await fs.read_text_file(ws, path, line=2, limit=5) == "last"
    assert await fs.read_text_file(ws, path, line=3) == ""
    assert await fs.read_text_file(ws, path, limit=1) == "first\n"


async def test_only_newline_splits_lines(base: Path, ws: Workspace) -> None:
    # U+2028, U+2029, U+0085, \x0b, \x0c and a lone \r are not line breaks here
    # (str.splitlines would split on all of them).
    text = "a\u2028b\u2029c\x85d\x0be\x0cf\rg\nsecond line\n"
    path = base / "odd.txt"
    path.write_text(text, encoding="utf-8", newline="")
    fs = FileSystem()
    assert await fs.read_text_file(ws, path) == text
    assert await fs.read_text_file(ws, path, limit=1) == "a\u2028b\u2029c\x85d\x0be\x0cf\rg\n"
    assert await fs.read_text_file(ws, path, line=2) == "second line\n"


async def test_multibyte_and_bom_are_kept(base: Path, ws: Workspace) -> None:
    text = "\ufeffhéllo wörld €\n😀 line two\n"
    path = base / "utf8.txt"
    path.write_text(text, encoding="utf-8")
    fs = FileSystem()
    assert await fs.read_text_file(ws, path) == text
    assert await fs.read_text_file(ws, path, line=2) == "😀 line two\n"


async def test_ten_megabyte_file_whole_and_windowed(base: Path, ws: Workspace) -> None:
    count = 1_000_000
    lines = [f"line {i:07d}\n" for i in range(1, count + 1)]  # 13 bytes each
    data = "".join(lines)
    assert len(data) >= 10 * 1000 * 1000
    path = base / "big.txt"
    path.write_text(data)
    fs = FileSystem()
    assert await fs.read_text_file(ws, path) == data
    assert await fs.read_text_file(ws, path, line=500_000, limit=3) == "".join(
        lines[499_999:500_002]
    )
    assert await fs.read_text_file(ws, path, line=count) == lines[-1]
    assert await fs.read_text_file(ws, path, line=count - 1, limit=5) == "".join(lines[-2:])
    assert await fs.read_text_file(ws, path, line=count + 1) == ""
    tail = await fs.read_text_file(ws, path, line=900_001)
    assert tail == "".join(lines[900_000:])


async def test_file_larger_than_max_read_bytes(base: Path, ws: Workspace) -> None:
    path = base / "large.txt"
    path.write_text("x" * 2000)
    fs = FileSystem(max_read_bytes=1000)
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, path)
    assert info.value.code == INVALID_PARAMS
    assert "too large" in info.value.message and str(path) in info.value.message
    assert info.value.data["size"] == 2000 and info.value.data["maxReadBytes"] == 1000
    assert await FileSystem(max_read_bytes=2000).read_text_file(ws, path) == "x" * 2000


# -- reading: errors ------------------------------------------------------------------


async def test_binary_file_is_a_clear_error(base: Path, ws: Workspace) -> None:
    path = base / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    fs = FileSystem()
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, path)
    error = info.value
    assert error.code == INVALID_PARAMS
    assert "not valid UTF-8" in error.message and str(path) in error.message
    assert error.data == {"path": str(path), "byteOffset": 0, "reason": "invalid_utf8"}


async def test_invalid_utf8_offset_and_clean_windows(base: Path, ws: Workspace) -> None:
    path = base / "mixed.txt"
    path.write_bytes(b"good line\nbad \xe9 latin-1\ngood again\n")
    fs = FileSystem()
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, path)
    assert info.value.data["byteOffset"] == len(b"good line\nbad ")
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, path, line=2, limit=1)
    assert info.value.data["byteOffset"] == len(b"good line\nbad ")
    # windows that do not contain the bad byte are returned untouched
    assert await fs.read_text_file(ws, path, limit=1) == "good line\n"
    assert await fs.read_text_file(ws, path, line=3) == "good again\n"
    # a truncated multi-byte sequence at the very end is invalid too
    cut = base / "cut.txt"
    cut.write_bytes("ok €".encode()[:-1])
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, cut)
    assert info.value.data["byteOffset"] == 3


async def test_missing_file_is_not_found(base: Path, ws: Workspace) -> None:
    path = base / "x" / "y.txt"
    fs = FileSystem()
    for missing in (path, base / "nope.txt"):
        with pytest.raises(RequestError) as info:
            await fs.read_text_file(ws, missing)
        assert info.value.code == RESOURCE_NOT_FOUND == -32002
        assert "not found" in info.value.message
        assert str(missing) in info.value.message
    # a parent that is a regular file: also "not found"
    (base / "plain").write_text("x")
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, base / "plain" / "child.txt")
    assert info.value.code == RESOURCE_NOT_FOUND


async def test_directory_is_invalid_params(base: Path, ws: Workspace) -> None:
    fs = FileSystem()
    with pytest.raises(RequestError) as info:
        await fs.read_text_file(ws, base)
    assert info.value.code == INVALID_PARAMS
    assert "directory" in info.value.message


async def test_fifo_is_refused_without_blocking(base: Path, ws: Workspace) -> None:
    fifo = base / "pipe"
    os.mkfifo(fifo)
    fs = FileSystem()
    with pytest.raises(RequestError) as info:
        await asyncio.wait_for(fs.read_text_file(ws, fifo), 5)
    assert info.value.code == INVALID_PARAMS
    assert "not a regular file" in info.value.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_unreadable_file_is_permission_denied(base: Path, ws: Workspace) -> None:
    path = base / "locked.txt"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(RequestError) as info:
        await FileSystem().read_text_file(ws, path)
    assert info.value.code == PERMISSION_DENIED


# -- writing --------------------------------------------------------------------------


async def test_write_creates_parents_and_new_file_mode(base: Path, ws: Workspace) -> None:
    path = base / "a" / "b" / "c" / "new.txt"
    fs = FileSystem()
    await fs.write_text_file(ws, path, "hello\r\nworld")
    assert path.read_bytes() == b"hello\r\nworld"  # written exactly, no newline translation
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~current_umask()
    assert await fs.read_text_file(ws, path) == "hello\r\nworld"
    assert temp_files(path.parent) == []


async def test_write_replaces_and_keeps_mode(base: Path, ws: Workspace) -> None:
    path = base / "keep.txt"
    path.write_text("old content that is longer than the new one\n")
    path.chmod(0o640)
    fs = FileSystem()
    await fs.write_text_file(ws, path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    path.chmod(0o755)
    await fs.write_text_file(ws, path, "#!/bin/sh\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert temp_files(base) == []


async def test_write_unicode_and_empty(base: Path, ws: Workspace) -> None:
    path = base / "u.txt"
    fs = FileSystem()
    await fs.write_text_file(ws, path, "é€😀\u2028\n")
    assert path.read_bytes() == "é€😀\u2028\n".encode()
    await fs.write_text_file(ws, path, "")
    assert path.read_bytes() == b""


async def test_write_errors(base: Path, ws: Workspace) -> None:
    fs = FileSystem()
    (base / "dir").mkdir()
    with pytest.raises(RequestError) as info:
        await fs.write_text_file(ws, base / "dir", "x")
    assert info.value.code == INVALID_PARAMS and "directory" in info.value.message
    (base / "file").write_text("x")
    with pytest.raises(RequestError) as info:
        await fs.write_text_file(ws, base / "file" / "child.txt", "x")
    assert info.value.code == INVALID_PARAMS and "not a directory" in info.value.message
    with pytest.raises(RequestError) as info:
        await fs.write_text_file(ws, base / "s.txt", "lone \ud800 surrogate")
    assert info.value.code == INVALID_PARAMS
    assert not (base / "s.txt").exists()
    assert temp_files(base) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_write_into_read_only_directory(base: Path, ws: Workspace) -> None:
    ro = base / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(RequestError) as info:
            await FileSystem().write_text_file(ws, ro / "x.txt", "x")
        assert info.value.code == PERMISSION_DENIED
    finally:
        ro.chmod(0o755)


async def test_concurrent_writes_are_each_atomic(base: Path, ws: Workspace) -> None:
    path = base / "contended.txt"
    fs = FileSystem()
    contents = [f"writer {i:02d}\n" * (5000 + 97 * i) for i in range(50)]
    await asyncio.wait_for(
        asyncio.gather(*(fs.write_text_file(ws, path, c) for c in contents)), timeout=60
    )
    assert path.read_text() in contents
    assert temp_files(base) == []


async def test_buffer_provider_and_on_write(base: Path, ws: Workspace) -> None:
    edited = base / "edited.py"
    edited.write_text("on disk\n")
    unsaved_only = base / "unsaved.py"  # exists only in the editor
    plain = base / "plain.py"
    plain.write_text("plain disk\n")
    buffers = {edited: "unsaved 1\r\nunsaved 2\nunsaved 3", unsaved_only: "fresh\n"}
    asked: list[Path] = []

    def provider(path: Path) -> str | None:
        asked.append(path)
        return buffers.get(path)

    writes: list[tuple[Path, str]] = []
    fs = FileSystem(buffer_provider=provider, on_write=lambda p, c: writes.append((p, c)))
    assert await fs.read_text_file(ws, edited) == "unsaved 1\r\nunsaved 2\nunsaved 3"
    assert await fs.read_text_file(ws, edited, line=2, limit=1) == "unsaved 2\n"
    assert await fs.read_text_file(ws, edited, line=3) == "unsaved 3"
    assert await fs.read_text_file(ws, edited, line=4) == ""
    assert await fs.read_text_file(ws, edited, limit=0) == ""
    assert await fs.read_text_file(ws, unsaved_only) == "fresh\n"
    assert await fs.read_text_file(ws, plain) == "plain disk\n"  # provider returned None
    assert plain in asked

    await fs.write_text_file(ws, plain, "written\n")
    assert writes == [(plain, "written\n")]
    assert plain.read_text() == "written\n"
    with pytest.raises(RequestError):
        await fs.write_text_file(ws, base, "cannot write a directory")
    assert writes == [(plain, "written\n")]  # not called for a failed write


async def test_failing_on_write_hook_does_not_fail_the_write(
    base: Path, ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(path: Path, content: str) -> None:
        raise RuntimeError("editor hook broke")

    path = base / "f.txt"
    await FileSystem(on_write=broken).write_text_file(ws, path, "ok")
    assert path.read_text() == "ok"
    assert "on_write hook failed" in caplog.text


async def test_cancelled_write_is_all_or_nothing(base: Path, ws: Workspace) -> None:
    path = base / "cancel.txt"
    path.write_text("old")
    writes: list[str] = []
    fs = FileSystem(on_write=lambda p, c: writes.append(c))
    new = "N" * (8 * 1024 * 1024)
    task = asyncio.create_task(fs.write_text_file(ws, path, new))
    await asyncio.sleep(0)  # let it start, then cancel mid-flight
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    content = path.read_text()
    assert content in ("old", new)
    assert writes == ([new] if content == new else [])
    assert temp_files(base) == []


async def test_sigkill_during_write_never_leaves_a_mixed_file(base: Path, ws: Workspace) -> None:
    size = 5 * 1024 * 1024
    target = base / "victim.txt"
    for run in range(6):
        # "pause" runs are killed exactly mid-write (half of the new content is in the
        # temp file); "free" runs are killed whenever the test gets to it.
        mode = "pause" if run % 2 == 0 else "free"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(HELPERS / "fs_writer.py"),
            str(target),
            str(size),
            mode,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        try:
            markers = (
                [b"wrote 1\n", b"mid-write\n"] if mode == "pause" else [b"wrote "] * (1 + run % 3)
            )
            for expected in markers:
                line = await asyncio.wait_for(proc.stdout.readline(), 30)
                assert line.startswith(expected), line
        finally:
            proc.send_signal(signal.SIGKILL)
            returncode = await asyncio.wait_for(proc.wait(), 30)
        assert returncode == -signal.SIGKILL
        data = target.read_bytes()
        assert len(data) == size
        assert data in (b"A" * size, b"B" * size), "target holds a mix of two writes"
        leftovers = temp_files(base)
        if mode == "pause":
            assert data == b"A" * size  # the interrupted B write never reached the target
            assert len(leftovers) == 1  # ... it only ever touched its temp file
            assert (base / leftovers[0]).read_bytes() == b"B" * (size // 2)
        for name in leftovers:  # what a killed writer cannot clean up
            os.unlink(base / name)
