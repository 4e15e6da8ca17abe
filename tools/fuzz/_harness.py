"""The process under test, what it must answer, and the invariants checked on every line.

Invariants (any breach is recorded as a `Violation`):
- no death: the process stays alive until we close its stdin, then exits with code 0;
- no hang: every well-formed request of ours is answered within `hang_seconds`;
- valid output: every line it writes is a JSON-RPC 2.0 message (a request, a notification,
  or a response with exactly one of result/error and a proper error object);
- exactly one answer: a response carries the id of one of our requests (its exact JSON
  value, as `request_ids` reads the line we sent), once, or `null` (on an error: JSON-RPC's
  answer to what cannot be identified; on a result only as the answer to a request whose
  id was null); never the id of a notification or of a response we sent, nor an id that
  merely appears elsewhere in a line of ours (a sessionId, an id nested in params).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.fuzz._internal_errors import INTERNAL_ERROR, InternalErrorLog
from tools.fuzz._mutate import request_ids, strict_parse

_KEEP_LINE_BYTES = 512  # of a line that may be answered, to show what an answer answered (a million inputs keep many)


@dataclass
class Violation:
    kind: str
    detail: str
    line: bytes = b""

    def __str__(self) -> str:
        shown = self.line[:300]
        return f"{self.kind}: {self.detail}" + (f"\n  input: {shown!r}" if shown else "")


@dataclass
class Stats:
    inputs: int = 0
    lines_out: int = 0
    answers: int = 0
    null_id_errors: int = 0
    peer_requests: int = 0
    probes: int = 0
    slowest_probe: float = 0.0  # seconds from a liveness probe sent to its answer
    error_codes: dict[int, int] = field(default_factory=dict)


class Target:
    """A process speaking ACP on stdio, fed hostile lines and watched."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: dict[str, str] | None = None,
        hang_seconds: float = 10.0,
        internal_errors: InternalErrorLog | None = None,
    ) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = env
        self.hang_seconds = hang_seconds
        self.proc: asyncio.subprocess.Process | None = None
        self.violations: list[Violation] = []
        self.stats = Stats()
        self.required: dict[Any, tuple[float, bytes]] = {}  # id -> (sent at, line)
        # Ids of the other requests we sent (damaged, invalid, in batches): each may be
        # answered as many times as it was sent (once, but for a batch that repeats it).
        self.allowed: dict[Any, tuple[bytes, int]] = {}  # id -> (start of the line, answers left)
        self.null_requests = 0  # well-formed requests with id null not answered yet
        self.answered: set[Any] = set()
        self.recent_answers: dict[Any, bytes] = {}  # the last answers, to show both of a duplicate
        self.our_response_ids: set[Any] = set()
        self.on_request: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        self.on_answer: Callable[[dict[str, Any]], None] | None = None
        self.stderr_tail: deque[str] = deque(maxlen=40)
        self.internal_errors = internal_errors  # when set, every -32603 is recorded
        self._reader: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env={**os.environ, **(self.env or {})},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=256 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())
        self._stderr = asyncio.create_task(self._read_stderr())

    # -- sending ----------------------------------------------------------------------

    async def send(
        self, line: bytes, expect: str = "none", rid: Any = None, ids: Sequence[Any] = ()
    ) -> None:
        """Write `line`. `expect` "answer": a well-formed request, `rid` must be answered
        exactly once; "response": our answer to one of the peer's requests (see
        `note_response_sent`), never to be answered. Otherwise what may be answered is read
        from the line itself, and `ids`: those of the requests in it as generated, before
        it was damaged."""
        assert self.proc is not None and self.proc.stdin is not None
        self.note_sent(line, expect, rid, ids)
        try:
            self.proc.stdin.write(line + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self._died("stdin closed while sending", line)

    def note_sent(
        self, line: bytes, expect: str = "none", rid: Any = None, ids: Sequence[Any] = ()
    ) -> None:
        """Record what a reply to `line` may carry (see `send`)."""
        self.stats.inputs += 1
        if expect == "answer":
            self.required[_key(rid)] = (time.monotonic(), line)
            return
        if expect == "response":
            return
        candidates = request_ids(line)
        for generated in ids:  # recovered from the damage by a more lenient reader than ours
            if not any(_key(c) == _key(generated) for c in candidates if c is not None):
                candidates.append(generated)
        for candidate in candidates:
            if candidate is None:
                self.null_requests += 1
                continue
            # (Damage can make a request's id read as one of the peer's: it is still ours.)
            key = _key(candidate)
            _, left = self.allowed.get(key, (b"", 0))
            self.allowed[key] = (line[:_KEEP_LINE_BYTES], left + 1)

    def note_response_sent(self, rid: Any) -> None:
        self.our_response_ids.add(_key(rid))

    # -- reading ----------------------------------------------------------------------

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            try:
                line = await self.proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError) as exc:
                self.violations.append(
                    Violation("invalid output", f"unreadable output line: {exc}")
                )
                return
            if not line:
                break
            if line.strip():
                self.stats.lines_out += 1
                self._check_line(line.rstrip(b"\n"))
            self._changed.set()
        if not self._closing:
            await self.proc.wait()
            self._died(f"stdout closed (exit code {self.proc.returncode})")

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while True:
            line = await self.proc.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            self.stderr_tail.append(text)
            if self.internal_errors is not None:
                self.internal_errors.note_stderr(text)

    def _died(self, why: str, line: bytes = b"") -> None:
        if not any(v.kind == "death" for v in self.violations):
            tail = "\n    ".join(self.stderr_tail)
            self.violations.append(Violation("death", f"{why}; stderr tail:\n    {tail}", line))
        self._changed.set()

    def _check_line(self, raw: bytes) -> None:
        try:
            message = strict_parse(raw)
        except (ValueError, RecursionError, UnicodeError) as exc:
            self.violations.append(Violation("invalid output", f"not JSON: {exc}", raw))
            return
        problem = _envelope_problem(message)
        if problem:
            self.violations.append(Violation("invalid output", problem, raw))
            return
        if "method" in message:
            if "id" in message:
                self.stats.peer_requests += 1
                task = asyncio.create_task(self._answer_peer(message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            return
        self._check_response(message, raw)

    async def _answer_peer(self, message: dict[str, Any]) -> None:
        if self.on_request is not None:
            await self.on_request(message)

    def _check_response(self, message: dict[str, Any], raw: bytes) -> None:
        rid = message["id"]
        if "error" in message:
            code = message["error"]["code"]
            self.stats.error_codes[code] = self.stats.error_codes.get(code, 0) + 1
            if code == INTERNAL_ERROR and self.internal_errors is not None:
                self.internal_errors.note_answer(message, self._sent_line(rid))
        if rid is None:
            self._check_null_id(message, raw)
            return
        key = _key(rid)
        if key in self.required:
            sent, _ = self.required.pop(key)
            if isinstance(rid, str) and rid.startswith("probe-"):
                waited = time.monotonic() - sent
                self.stats.slowest_probe = max(self.stats.slowest_probe, waited)
        elif key in self.allowed:
            line, left = self.allowed.pop(key)
            if left > 1:
                self.allowed[key] = (line, left - 1)
        elif key in self.answered:
            first = self.recent_answers.get(key, b"(no longer kept)")
            detail = f"id {rid!r} answered twice; the first answer: {first[:300]!r}"
            self.violations.append(Violation("duplicate answer", detail, raw))
            return
        else:
            what = "a response we sent" if key in self.our_response_ids else "no request of ours"
            self.violations.append(
                Violation("unexpected answer", f"id {rid!r} answers {what}", raw)
            )
            return
        self.answered.add(key)
        self.recent_answers[key] = raw[:300]
        if len(self.recent_answers) > 20_000:
            del self.recent_answers[next(iter(self.recent_answers))]
        self.stats.answers += 1
        if self.on_answer is not None:
            self.on_answer(message)

    def _check_null_id(self, message: dict[str, Any], raw: bytes) -> None:
        """`id: null` is JSON-RPC's answer to what cannot be identified: fine on an error.
        A result with id null can only answer a request whose id was null."""
        if "error" in message:
            self.stats.null_id_errors += 1
        elif self.null_requests > 0:
            self.null_requests -= 1
            self.stats.answers += 1
        else:
            self.violations.append(
                Violation("unexpected answer", "a result with id null answers no request", raw)
            )

    def _sent_line(self, rid: Any) -> bytes | None:
        """The line we sent with this id (or its start), when we still know it."""
        if rid is None:
            return None
        key = _key(rid)
        if key in self.required:
            return self.required[key][1]
        if key in self.allowed:
            return self.allowed[key][0]
        return None

    # -- waiting ----------------------------------------------------------------------

    async def settle(self, *, final: bool = False) -> None:
        """Wait until every required answer arrived; report the ones older than the limit."""
        deadline = time.monotonic() + self.hang_seconds
        while self.required and time.monotonic() < deadline and not self.dead:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 0.5)
        now = time.monotonic()
        for rid, (sent, line) in list(self.required.items()):
            if final or now - sent >= self.hang_seconds:
                self.violations.append(
                    Violation(
                        "hang", f"request {rid[1]!r} unanswered after {now - sent:.1f} s", line
                    )
                )
                del self.required[rid]

    @property
    def dead(self) -> bool:
        return any(v.kind == "death" for v in self.violations)

    async def close(self) -> int | None:
        assert self.proc is not None and self.proc.stdin is not None
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), 15)
        except TimeoutError:
            self.violations.append(
                Violation("hang", "the process did not exit within 15 s of stdin EOF")
            )
            self.proc.kill()
            code = await self.proc.wait()
        if self._reader is not None:
            await self._reader
        if self._stderr is not None:
            await self._stderr
        if code != 0 and not self.dead:
            tail = "\n    ".join(self.stderr_tail)
            self.violations.append(
                Violation("death", f"exit code {code} at stdin EOF; stderr tail:\n    {tail}")
            )
        return code


def _key(rid: Any) -> Any:
    # A long string id is kept as its digest: a million inputs with ids of up to 1 MB
    # would otherwise hold gigabytes in the sets of ids sent and answered.
    if isinstance(rid, str):
        return ("s", rid) if len(rid) <= 64 else ("h", hashlib.sha256(rid.encode()).digest())
    return ("n", rid)


def _envelope_problem(message: Any) -> str | None:
    if not isinstance(message, dict):
        return "not a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'missing or wrong "jsonrpc"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method is not a string"
        if "result" in message or "error" in message:
            return "both method and result/error"
        if "id" in message and (
            not isinstance(message["id"], int | str) or isinstance(message["id"], bool)
        ):
            return "request id is neither a string nor an integer"
        return None
    if "id" not in message:
        return "a response without id"
    rid = message["id"]
    if rid is not None and (not isinstance(rid, int | str) or isinstance(rid, bool)):
        return "response id of a wrong type"
    if ("result" in message) == ("error" in message):
        return "a response needs exactly one of result and error"
    if "error" in message:
        error = message["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or isinstance(error.get("code"), bool)
        ):
            return "error.code is not an integer"
        if not isinstance(error.get("message"), str):
            return "error.message is not a string"
    return None
