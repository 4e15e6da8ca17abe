"""The first `session/new` with MCP servers imports the `mcp` SDK (seconds of CPU): in a
worker thread, so an unrelated request is answered while the import is still under way.

The agent runs with an import hook that holds the import of `mcp`'s modules until the test lets it
go, and the test lets it go only after the unrelated answer arrived: were the import on the
event loop, that answer could never come first (the test would time out)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

ANSWER_TIMEOUT = 60

HELD_IMPORT = """
import os, sys
RELEASE = int(sys.argv.pop(1))

class HoldMcp:
    def find_spec(self, name, path=None, target=None):
        if name.startswith("mcp."):  # importing it (a bare find_spec("mcp") only looks)
            sys.meta_path.remove(self)
            sys.stderr.write("mcp import started\\n")
            sys.stderr.flush()
            os.read(RELEASE, 1)
        return None

sys.meta_path.insert(0, HoldMcp())
from acpstack.cli import main
sys.exit(main(sys.argv[1:]))
"""


async def test_a_request_is_answered_while_the_mcp_sdk_imports(tmp_path: Path) -> None:
    release_read, release_write = os.pipe()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", HELD_IMPORT, str(release_read), "agent"),
        *("--store", str(tmp_path / "s.db")),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=(release_read,),
    )
    os.close(release_read)
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def answer() -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(stdout.readline(), ANSWER_TIMEOUT)
            assert line, "the agent closed its stdout"
            message: dict[str, Any] = json.loads(line)
            if "id" in message and "method" not in message:
                return message

    try:
        send({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        assert "result" in await answer()
        server = {"name": "calc", "command": "no-such-mcp-server", "args": [], "env": []}
        send(
            {
                "id": "mcp",
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": [server]},
            }
        )
        while b"mcp import started" not in await asyncio.wait_for(
            stderr.readline(), ANSWER_TIMEOUT
        ):
            pass
        send(
            {
                "id": "other",
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            }
        )
        first = await answer()
        assert first["id"] == "other" and "sessionId" in first["result"]
        os.write(release_write, b"x")  # now the import may finish
        second = await answer()
        assert second["id"] == "mcp"
    finally:
        os.close(release_write)
        stdin.close()
        try:
            await asyncio.wait_for(process.wait(), ANSWER_TIMEOUT)
        finally:
            if process.returncode is None:  # it failed the test: leave nothing running
                process.kill()
                await process.wait()
