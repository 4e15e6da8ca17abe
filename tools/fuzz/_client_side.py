"""Fuzz a client: we play the agent. The client under test keeps prompting us; while a
prompt is open we stream hostile updates and requests at it, and we answer its own
requests with valid, damaged or error responses."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

from tools.fuzz._catalog import Method, catalog, handled_by, result_def
from tools.fuzz._harness import Target
from tools.fuzz._mutate import (
    checked,
    dump,
    expectation,
    generated_request_ids,
    mutate_line,
    mutate_message,
    mutate_tree,
    random_bytes,
    readable_id,
)
from tools.fuzz._values import SchemaValues

PROBE_EVERY = 40
AGENT_CAPS = {
    "loadSession": True,
    "promptCapabilities": {"image": True, "embeddedContext": True},
    "sessionCapabilities": {"list": {}, "close": {}, "resume": {}},
}


class ClientFuzzer:
    def __init__(self, target: Target, rng: random.Random, workspace: Path) -> None:
        self.target = target
        self.rng = rng
        self.workspace = workspace
        self.sessions: list[str] = []
        self.ids = itertools.count(2_000_000_000)
        self.open_prompts: list[Any] = []
        self.values = SchemaValues(
            rng,
            hints={
                "sessionId": (0.9, self._session_id),
                "path": (0.8, self._path),
                "cwd": (0.5, str(workspace)),
                "protocolVersion": (0.95, 1),
                "agentCapabilities": (0.9, AGENT_CAPS),
                "terminalId": (0.5, "t-1"),
            },
        )
        methods = catalog(self.values)
        self.all_methods = methods
        self.outbound: list[Method] = handled_by(methods, "client")
        target.on_request = self.answer_client

    # -- what we send ---------------------------------------------------------------------

    def _session_id(self) -> str:
        return self.rng.choice(self.sessions) if self.sessions else "no-such-session"

    def _path(self) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.5:
            return str(
                self.workspace
                / rng.choice(
                    ["README.md", "test_fuzz.py", "new.txt", "sub/dir/f.txt", "../escape.txt"]
                )
            )
        if roll < 0.7:
            return rng.choice(
                ["/etc/passwd", "/", "relative.txt", "", str(self.workspace), "/proc/self/environ"]
            )
        return str(self.workspace) + "/" + self.values.string()

    def next_id(self) -> Any:
        n = checked(next(self.ids))
        return n if self.rng.random() < 0.6 else f"fa-{n}"

    def odd_id(self) -> Any:
        n = checked(next(self.ids))
        return self.rng.choice([10**30 + n, -n, f"\u00e9{n}", f" {n} "])

    async def run(self, inputs: int) -> None:
        for n in range(inputs):
            if self.target.dead:
                return
            await self.one_input()
            if self.open_prompts and self.rng.random() < 0.1:
                await self.end_prompt(self.open_prompts.pop(0))
            if n % PROBE_EVERY == PROBE_EVERY - 1:
                await self.probe()
        while self.open_prompts:
            await self.end_prompt(self.open_prompts.pop(0))
        await self.probe()

    async def probe(self) -> None:
        rid = f"probe-{checked(next(self.ids))}"
        await self.target.send(
            dump({"jsonrpc": "2.0", "id": rid, "method": "_fuzz/ping", "params": {}}), "answer", rid
        )
        self.target.stats.probes += 1
        await self.target.settle()

    async def one_input(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            await self.target.send(random_bytes(rng))
            return
        if roll < 0.10:
            value: Any = {"jsonrpc": "2.0", "id": self.next_id(), "result": self.values.free(0)}
            if rng.random() < 0.5:
                value = mutate_message(rng, value, self.odd_id)
            line = dump(value)
            await self.target.send(line, *expectation(line), generated_request_ids(value))
            return
        if roll < 0.55:
            method = next(
                m for m in self.outbound if m.name == "session/update"
            )  # the bulk of real traffic
        else:
            method = rng.choice(self.outbound)
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": method.name,
            "params": self.values.for_def(method.params),
        }
        if method.result is not None:
            message["id"] = self.next_id()
        value = mutate_message(rng, message, self.odd_id) if rng.random() < 0.5 else message
        line = dump(value)
        if rng.random() < 0.12:
            line = mutate_line(rng, line)
        await self.target.send(line, *expectation(line), generated_request_ids(value))

    # -- answering the client -------------------------------------------------------------

    async def answer_client(self, request: dict[str, Any]) -> None:
        rid = request["id"]
        self.target.note_response_sent(rid)
        if request["method"] == "session/prompt":
            self.open_prompts.append(rid)  # answered later, after some traffic
            return
        await self.respond(request["method"], rid)

    async def end_prompt(self, rid: Any) -> None:
        await self.respond("session/prompt", rid)

    async def respond(self, method: str, rid: Any) -> None:
        result_name = result_def(self.all_methods, method)
        roll = self.rng.random()
        if roll < 0.08 or result_name is None:
            value: Any = {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32603, "message": "fuzz says no"},
            }
        else:
            result = self._plausible_result(method, result_name)
            value = {"jsonrpc": "2.0", "id": rid, "result": result}
            if roll < 0.3:
                value["result"] = mutate_tree(self.rng, result)
        line = dump(value)
        if self.rng.random() < 0.05:
            line = mutate_line(self.rng, line)
            if readable_id(line) != rid:  # unreadable: the client may rightly wait, so answer again
                await self.target.send(line, "response")
                line = dump(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {"code": -32603, "message": "fuzz retry"},
                    }
                )
        await self.target.send(line, "response")

    def _plausible_result(self, method: str, result_name: str) -> Any:
        if method == "initialize":
            return {"protocolVersion": 1, "agentCapabilities": AGENT_CAPS, "authMethods": []}
        if method == "session/new":
            session_id = f"sess-{next(self.ids)}"
            if len(self.sessions) < 32:
                self.sessions.append(session_id)
            return {"sessionId": session_id}
        if method == "session/prompt":
            return {
                "stopReason": self.rng.choice(["end_turn", "cancelled", "max_tokens", "refusal"])
            }
        return self.values.for_def(result_name)
