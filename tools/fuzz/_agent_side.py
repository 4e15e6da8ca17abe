"""Fuzz an agent: we play a client that advertises fs and terminals, send hostile lines,
and answer the agent's own requests with valid, damaged or error responses."""

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
CLIENT_CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


class AgentFuzzer:
    def __init__(self, target: Target, rng: random.Random, workspace: Path) -> None:
        self.target = target
        self.rng = rng
        self.workspace = workspace
        self.sessions: list[str] = []
        self.ids = itertools.count(1_000_000_000)
        self.values = SchemaValues(
            rng,
            hints={
                "sessionId": (0.85, self._session_id),
                "cwd": (0.9, str(workspace)),
                "mcpServers": (1.0, list),  # never ask the agent to start a process
                "additionalDirectories": (0.9, list),
                "prompt": (0.7, self._prompt),
                "requestId": (0.5, self._pending_id),
                "protocolVersion": (0.9, 1),
                "clientCapabilities": (0.9, CLIENT_CAPS),
            },
        )
        methods = catalog(self.values)
        self.inbound: list[Method] = handled_by(methods, "agent")
        self.all_methods = methods
        self.pending: list[Any] = []
        target.on_request = self.answer_agent
        target.on_answer = self.learn

    # -- what we send -------------------------------------------------------------------

    def _session_id(self) -> str:
        return self.rng.choice(self.sessions) if self.sessions else "no-such-session"

    def _pending_id(self) -> Any:
        return self.rng.choice(self.pending) if self.pending else 1

    def _prompt(self) -> list[dict[str, Any]]:
        text = self.rng.choice(
            [
                "hello",
                "/help",
                "/plan",
                "/read README.md",
                "/run ls",
                "/edit README.md fuzz FUZZ",
                "add a line",
                "/mode x",
            ]
        )
        return [{"type": "text", "text": text}]

    def next_id(self) -> Any:
        n = checked(next(self.ids))
        return n if self.rng.random() < 0.6 else f"fz-{n}"

    def odd_id(self) -> Any:
        """A unique id that is valid JSON-RPC but unusual."""
        n = checked(next(self.ids))
        return self.rng.choice([10**30 + n, -n, f"\u00e9{n}", f"{n}\u2028", f" {n} ", str(n)])

    async def initialize(self) -> None:
        rid = self.next_id()
        message = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": 1,
                "clientCapabilities": CLIENT_CAPS,
                "clientInfo": {"name": "fuzz", "version": "0"},
            },
        }
        await self.target.send(dump(message), "answer", rid)
        new = {
            "jsonrpc": "2.0",
            "id": self.next_id(),
            "method": "session/new",
            "params": {"cwd": str(self.workspace), "mcpServers": []},
        }
        await self.target.send(dump(new), "answer", new["id"])
        await self.target.settle()

    async def run(self, inputs: int) -> None:
        await self.initialize()
        for n in range(inputs):
            if self.target.dead:
                return
            await self.one_input()
            if n % PROBE_EVERY == PROBE_EVERY - 1:
                await self.probe()
        await self.probe()

    async def probe(self) -> None:
        rid = f"probe-{checked(next(self.ids))}"
        await self.target.send(
            dump({"jsonrpc": "2.0", "id": rid, "method": "_fuzz/ping", "params": {}}), "answer", rid
        )
        self.target.stats.probes += 1
        await self.target.settle()
        self.pending = [
            p
            for p in self.pending
            if ("n", p) in self.target.required or ("s", p) in self.target.required
        ]

    async def one_input(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            await self.target.send(random_bytes(rng))
            return
        if roll < 0.10:
            await self.stray_response()
            return
        if roll < 0.25 and self.sessions:
            method = next(
                m for m in self.inbound if m.name == "session/prompt"
            )  # work that calls back
        else:
            method = rng.choice(self.inbound)
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": method.name,
            "params": self.values.for_def(method.params),
        }
        if method.result is not None:
            message["id"] = self.next_id()
        value: Any = message
        if rng.random() < 0.5:
            value = mutate_message(rng, message, self.odd_id)
        line = dump(value)
        if rng.random() < 0.12:
            line = mutate_line(rng, line)
        expect, expected_id = expectation(line)
        if expect == "answer":
            self.pending.append(expected_id)
        await self.target.send(line, expect, expected_id, generated_request_ids(value))

    async def stray_response(self) -> None:
        """A response to nothing (unique ids: a damaged one may read as a request)."""
        value: Any = {"jsonrpc": "2.0", "id": self.next_id(), "result": self.values.free(0)}
        if self.rng.random() < 0.5:
            value = mutate_message(self.rng, value, self.odd_id)
        line = dump(value)
        await self.target.send(line, *expectation(line), generated_request_ids(value))

    # -- answering the agent ------------------------------------------------------------

    async def answer_agent(self, request: dict[str, Any]) -> None:
        rid = request["id"]
        self.target.note_response_sent(rid)
        result_name = result_def(self.all_methods, request["method"])
        roll = self.rng.random()
        if roll < 0.08 or result_name is None:
            value: Any = {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32603, "message": "fuzz says no"},
            }
        else:
            result = self._plausible_result(request, result_name)
            value = {"jsonrpc": "2.0", "id": rid, "result": result}
            if roll < 0.35:
                value["result"] = mutate_tree(self.rng, result)
        line = dump(value)
        if self.rng.random() < 0.05:
            line = mutate_line(self.rng, line)
            if readable_id(line) != rid:
                # Damaged past reading its id: the agent cannot tell it was our answer and
                # may rightly wait for one. Send the damage, then a real answer.
                await self.target.send(line, "response")
                line = dump(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {"code": -32603, "message": "fuzz retry"},
                    }
                )
        await self.target.send(line, "response")

    def _plausible_result(self, request: dict[str, Any], result_name: str) -> Any:
        method = request["method"]
        params = request.get("params") or {}
        if method == "fs/read_text_file":
            return {
                "content": self.rng.choice(["# README\nfuzz\n", "", "é\u2028x", "line\r\n" * 3])
            }
        if method == "terminal/create":
            return {"terminalId": f"t{next(self.ids)}"}
        if method == "terminal/output":
            return {
                "output": "README.md\ntest_fuzz.py\n",
                "truncated": False,
                "exitStatus": {"exitCode": 0},
            }
        if method == "terminal/wait_for_exit":
            return {"exitCode": self.rng.choice([0, 1, None])}
        if method == "session/request_permission":
            options = params.get("options") or []
            if options and self.rng.random() < 0.8:
                return {
                    "outcome": {
                        "outcome": "selected",
                        "optionId": self.rng.choice(options).get("optionId", "x"),
                    }
                }
            return {"outcome": {"outcome": "cancelled"}}
        return self.values.for_def(result_name)

    def learn(self, answer: dict[str, Any]) -> None:
        result = answer.get("result")
        if (
            isinstance(result, dict)
            and isinstance(result.get("sessionId"), str)
            and len(self.sessions) < 64
        ):
            self.sessions.append(result["sessionId"])
