"""Test helpers for protocol v2: a raw JSON-lines client of an agent process (it sends
exactly what a test writes and keeps everything the agent wrote, as plain JSON), and a
check of messages against the official v2 JSON Schema (jsonschema)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PEERS = Path(__file__).resolve().parent / "peers"
V2_SCHEMA = REPO / "vendor" / "acp-schema" / "v2" / "schema.json"
Json = dict[str, Any]
Answer = Callable[[Json], Any]


def command_agent(db: Path, versions: str = "1,2", **env: str) -> tuple[list[str], dict[str, str]]:
    """argv and environment of tests/v2/peers/command_agent.py."""
    environ = {"V2_AGENT_DB": str(db), "V2_AGENT_VERSIONS": versions, **env}
    return [sys.executable, str(PEERS / "command_agent.py")], environ


class LineClient:
    """One agent process driven line by line. `answer(request)` gives the result of a
    request the agent sends (default: an error)."""

    def __init__(self, proc: asyncio.subprocess.Process, answer: Answer | None) -> None:
        self.proc = proc
        self.answer = answer
        self.messages: list[Json] = []  # what the agent wrote, in order
        self.sent: list[Json] = []
        self._ids = itertools.count(1)
        self._arrived = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(
        cls, argv: Sequence[str], env: Mapping[str, str] | None = None, answer: Answer | None = None
    ) -> LineClient:
        import os

        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
            limit=64 * 1024 * 1024,
        )
        return cls(proc, answer)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            self.messages.append(message)
            self._arrived.set()
            if "method" in message and "id" in message:
                await self._answer(message)

    async def _answer(self, request: Json) -> None:
        reply: Json = {"jsonrpc": "2.0", "id": request["id"]}
        try:
            if self.answer is None:
                raise LookupError(request["method"])
            reply["result"] = self.answer(request)
        except LookupError:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        await self.send(reply)

    async def send(self, message: Json) -> None:
        assert self.proc.stdin is not None
        self.sent.append(message)
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any, *, timeout: float = 15) -> Json:
        """Send a request and return the agent's response message (result or error)."""
        rid = next(self._ids)
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout)

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_for(
        self, predicate: Callable[[Json], bool], timeout: float = 15, *, start: int = 0
    ) -> Json:
        """The first message from index `start` on that matches (waits for it)."""
        async with asyncio.timeout(timeout):
            seen = start
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                self._arrived.clear()
                if self._reader.done():
                    raise EOFError(f"the agent ended; it wrote {self.messages[-5:]}")
                await self._arrived.wait()

    def updates(self, session_id: str, start: int = 0) -> list[Json]:
        return [
            m["params"]["update"]
            for m in self.messages[start:]
            if m.get("method") == "session/update" and m["params"].get("sessionId") == session_id
        ]

    async def close(self) -> int:
        assert self.proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            self.proc.stdin.close()
        try:
            async with asyncio.timeout(10):
                code = await self.proc.wait()
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        return code


def initialize_v2(version: int = 2, **extra: Any) -> Json:
    return {"protocolVersion": version, "info": {"name": "line-client", "version": "1"}, **extra}


@functools.cache
def _schema() -> Json:
    data: Json = json.loads(V2_SCHEMA.read_text("utf-8"))
    return data


def v2_problems(definition: str, payload: Any) -> list[str]:
    """What is wrong with `payload` as the v2 `$defs` entry `definition` (empty: valid)."""
    import jsonschema

    schema = {"$defs": _schema()["$defs"], "$ref": f"#/$defs/{definition}"}
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(payload)]


def invalid_v2_messages(client: LineClient) -> list[str]:
    """Every message the agent wrote that the v2 schema rejects (requests, notifications,
    results of our requests), with what is wrong."""
    methods = {m["id"]: m["method"] for m in client.sent if "method" in m and "id" in m}
    defs = {d.get("x-method"): {} for d in _schema()["$defs"].values()}
    for name, d in _schema()["$defs"].items():
        if "x-method" in d:
            defs[d["x-method"]][name] = d
    problems = []
    for message in client.messages:
        if "method" in message:
            suffix = "Request" if "id" in message else "Notification"
            names = [n for n in defs.get(message["method"], {}) if n.endswith(suffix)]
            payload = message.get("params")
        elif "result" in message and message.get("id") in methods:
            names = [n for n in defs.get(methods[message["id"]], {}) if n.endswith("Response")]
            payload = message["result"]
        else:
            continue
        for name in names:
            problems += [f"{name}: {p}" for p in v2_problems(name, payload)]
    return problems
