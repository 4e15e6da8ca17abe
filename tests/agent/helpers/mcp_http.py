"""Start `mcp_server.py` over streamable HTTP or SSE on 127.0.0.1 for a test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER = str(Path(__file__).parent / "mcp_server.py")


@contextmanager
def mcp_http_server(kind: str = "http", **env: str) -> Iterator[str]:
    """Yields the server's URL once it listens (it prints its port then); stops it after."""
    proc = subprocess.Popen(
        [sys.executable, SERVER, kind],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
    )
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()  # returns at once with "" if the server died
        assert port.isdigit(), f"the MCP server did not start (exit code {proc.poll()})"
        yield f"http://127.0.0.1:{port}/{'sse' if kind == 'sse' else 'mcp'}"
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
