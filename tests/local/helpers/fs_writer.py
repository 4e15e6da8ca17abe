"""Test helper: write alternating big contents to one file through FileSystem.

Usage: python fs_writer.py TARGET SIZE MODE

MODE "free":  write "A"*SIZE, "B"*SIZE, ... forever, printing "wrote <n>" (flushed) after
              every completed write, so the test can SIGKILL it at an arbitrary moment.
MODE "pause": complete one write of "A"*SIZE ("wrote 1"), then start writing "B"*SIZE;
              after half of the new content reached the temp file, print "mid-write"
              and block on stdin, so the test's SIGKILL lands exactly mid-write.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from acpstack.local import FileSystem, Workspace

_real_write = os.write
_pause = False


def _half_write(fd: int, data: bytes | memoryview) -> int:
    """os.write that writes at most half of the remaining data, pausing if asked."""
    global _pause
    view = memoryview(data)
    written = _real_write(fd, view[: max(1, len(view) // 2)])
    if _pause:
        _pause = False
        print("mid-write", flush=True)
        sys.stdin.readline()  # blocks until killed
    return written


async def main() -> None:
    global _pause
    target = Path(sys.argv[1])
    size = int(sys.argv[2])
    mode = sys.argv[3]
    contents = ["A" * size, "B" * size]
    fs = FileSystem()
    workspace = Workspace(str(target.parent))
    if mode == "pause":
        os.write = _half_write
    n = 0
    while True:
        await fs.write_text_file(workspace, target, contents[n % 2])
        n += 1
        print(f"wrote {n}", flush=True)
        if mode == "pause":
            _pause = True


if __name__ == "__main__":
    asyncio.run(main())
