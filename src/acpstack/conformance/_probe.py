"""A raw JSON-RPC client over any transport: it sends what a case asks (even garbage),
keeps every frame with its time, validates what the agent writes, and never waits
without a timeout.

The typed runtime (`acpstack.rpc`) would repair or reject much of what a checker needs
to see, so the probe works on plain JSON values.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from acpstack.conformance._client_sim import Answer, SimulatedClient
from acpstack.conformance._frames import KEEP_LIMIT, NOT_JSON, Frame, encode, parse
from acpstack.conformance._schema import MessageValidator, Sender, Violation
from acpstack.transports import Transport
from acpstack.wire import FrameDecoder, FramingError, Oversized

#: The largest line the checker reads from an agent (bigger ones are reported, not kept).
MAX_LINE = 64 * 1024 * 1024
#: Frames kept per connection; a flooding agent cannot exhaust memory.
MAX_FRAMES = 20_000

Predicate = Callable[[Frame], bool]
BAD_INPUT = "(bad input)"


class Responder(Protocol):
    """Answers the requests the peer sends (the checker's simulated client, or the agent of
    `check client`)."""

    async def answer(self, frame: Frame) -> Answer:
        """The answer to the request in `frame`: ("result", value) or ("error", {"code":
        ..., "message": ...}). Runs in a task of its own; the probe sends the answer
        unless the connection closed meanwhile."""
        ...

    def cancel_session(self, session_id: str) -> None:
        """The probe sent `session/cancel` for `session_id`: answer what is held for that
        session's turn as cancelled."""

    def release_held(self) -> None:
        """The probe is closing: answer everything still held, so no task waits forever."""


@dataclass
class Reply:
    """How a request ended: a result, an error, no answer in time, or a closed connection."""

    status: Literal["result", "error", "timeout", "closed"]
    """How the request ended: "result", "error", "timeout" or "closed"."""
    frame: Frame | None = None
    """The answer (None for a timeout or a closed connection)."""
    seconds: float = 0.0
    """How long the wait took."""

    @property
    def result(self) -> Any:
        """The answer's `result` member (None without an answer, or for an error)."""
        return self.frame.message.get("result") if self.frame is not None else None

    @property
    def error(self) -> dict[str, Any]:
        """The answer's `error` object; empty when there is none (or it is not an object)."""
        error = self.frame.message.get("error") if self.frame is not None else None
        return error if isinstance(error, dict) else {}

    @property
    def code(self) -> Any:
        """The error's `code` as sent (None without one; not necessarily an integer)."""
        return self.error.get("code")

    def describe(self) -> str:
        """A few words for a report: "a result", "error -32602: '...'", "no answer
        within 20.0 s" or "the connection closed before an answer"."""
        if self.status == "timeout":
            return f"no answer within {self.seconds:.1f} s"
        if self.status == "closed":
            return "the connection closed before an answer"
        if self.status == "error":
            return f"error {self.code}: {self.error.get('message')!r}"
        return "a result"


@dataclass
class SchemaProblem:
    frame: Frame
    violation: Violation


@dataclass
class _Waiter:
    predicate: Predicate
    future: asyncio.Future[Frame | None]


@dataclass
class ProbeLog:
    """What one connection showed, kept after it closed (for the whole-run cases)."""

    frames: list[Frame] = field(default_factory=list)
    schema: list[SchemaProblem] = field(default_factory=list)
    unmatched: list[Frame] = field(default_factory=list)  # responses to ids never sent
    duplicates: list[Frame] = field(default_factory=list)  # second answers to one id
    client: SimulatedClient | None = None
    dropped_frames: int = 0


def id_key(value: Any) -> str:
    """Request ids keep their JSON type: 1 and "1" are different ids."""
    return json.dumps(value)


class Probe:
    """One end of a connection. `peer` is the side at the other end ("agent" for the
    checker, "client" for `check client`): its messages are the ones validated.

    The probe owns the transport and the tasks that answer the peer's requests (with
    `responder`); `close` ends them. Every frame is kept (up to 20,000 per connection),
    with schema problems, answers to unknown ids and duplicate answers in `log`. No
    wait lasts longer than its timeout, and every wait ends when the connection closes.

    Args:
        transport: The connection to the peer; the probe owns it.
        responder: Answers the peer's requests.
        validator: Checks the peer's messages against the schema (None: no checks).
        peer: Which side the peer is.
    """

    def __init__(
        self,
        transport: Transport,
        responder: Responder,
        validator: MessageValidator | None,
        *,
        peer: Sender = "agent",
    ) -> None:
        self.transport = transport
        self.responder = responder
        self.validator = validator
        self.peer: Sender = peer
        client = responder if isinstance(responder, SimulatedClient) else None
        self.log: ProbeLog = ProbeLog(client=client)
        """What the connection showed; kept after it closed."""
        self.closed: asyncio.Event = asyncio.Event()
        """Set once the peer's input ended (or `close` was called)."""
        self._decoder = FrameDecoder(MAX_LINE, "ndjson")
        self._start = time.monotonic()
        self._seq = 0
        self._next_id = 1
        self._methods: dict[str, str] = {}  # id key of our request -> its method
        self._answered: dict[str, Frame] = {}
        self._waiters: list[_Waiter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def frames(self) -> list[Frame]:
        """Every frame kept so far, both directions, in order (`log.frames`)."""
        return self.log.frames

    def start(self) -> None:
        """Start reading from the transport (once)."""
        self.transport.start_reading(self._on_data, self._on_eof)

    # -- sending ------------------------------------------------------------------------

    def next_id(self) -> int:
        """A fresh request id (1, 2, 3...), for requests built by hand."""
        self._next_id += 1
        return self._next_id - 1

    def send(self, message: Any, *, method_for: str | None = None) -> Frame:
        """Send one JSON value. For a request, its id is remembered for the answer."""
        if isinstance(message, dict) and "method" in message and "id" in message:
            self._methods[id_key(message["id"])] = str(message["method"])
        elif method_for is not None and isinstance(message, dict):
            self._methods[id_key(message.get("id"))] = method_for
        return self.send_raw(encode(message), message)

    def send_raw(self, data: bytes, message: Any = NOT_JSON) -> Frame:
        """Write `data` exactly as given (even garbage) and keep it as an "out" frame;
        `message` is its JSON value when known (parsed from `data` otherwise). Its id is
        not remembered: an answer to it counts as unmatched unless `expect_answers`
        names it (`send` remembers ids)."""
        if message is NOT_JSON:
            message, _ = parse(data.rstrip(b"\n"))
        frame = self._keep("out", data.rstrip(b"\n"), message, "")
        self.transport.write(data)
        return frame

    def expect_answers(self, ids: tuple[Any, ...]) -> None:
        """Responses with these ids are expected although no request of ours carried them
        (e.g. an agent that recovers the id of a line that is not valid JSON)."""
        for rid in ids:
            self._methods.setdefault(id_key(rid), BAD_INPUT)

    async def request(self, method: str, params: Any, *, timeout: float) -> Reply:
        """Send a request with a fresh id and wait up to `timeout` seconds for its
        answer. Never raises for what the peer does: the `Reply` says how it ended."""
        rid = self.next_id()
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await self.reply(rid, timeout=timeout)

    def notify(self, method: str, params: Any) -> Frame:
        """Send a notification and return its frame. For `session/cancel`, the responder
        is told first, so requests it holds for that turn are answered as cancelled."""
        if method == "session/cancel" and isinstance(params, dict):
            self.responder.cancel_session(str(params.get("sessionId")))
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def reply(self, rid: Any, *, timeout: float) -> Reply:
        """Wait for the answer to our request `rid`."""
        key = id_key(rid)
        began = time.monotonic()
        frame = self._answered.get(key)
        if frame is None:
            frame = await self.wait_for(lambda f: f.is_response and _key_of(f) == key, timeout)
        seconds = time.monotonic() - began
        if frame is None:
            return Reply("closed" if self.closed.is_set() else "timeout", None, seconds)
        status: Literal["result", "error"] = "error" if "error" in frame.message else "result"
        return Reply(status, frame, seconds)

    # -- waiting ------------------------------------------------------------------------

    async def wait_for(
        self, predicate: Predicate, timeout: float, *, after: int = 0
    ) -> Frame | None:
        """The first frame from the agent (with seq > `after`) that matches, or None when
        the time is up or the connection closed."""
        for frame in self.frames:
            if frame.seq > after and frame.direction == "in" and predicate(frame):
                return frame
        if self.closed.is_set():
            return None
        future: asyncio.Future[Frame | None] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(predicate, future)
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            return None
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    async def quiet(self, period: float, *, limit: float = 5.0) -> None:
        """Wait until the agent wrote nothing for `period` seconds (at most `limit`)."""
        deadline = time.monotonic() + limit
        while not self.closed.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            seen = self._seq
            got = await self.wait_for(_any_frame, min(period, left), after=seen)
            if got is None:
                return

    def since(self, seq: int) -> list[Frame]:
        """The peer's frames that came after frame number `seq` (see `last_seq`)."""
        return [f for f in self.frames if f.seq > seq and f.direction == "in"]

    @property
    def heard_from_peer(self) -> bool:
        """Whether the peer has written anything yet."""
        return any(f.direction == "in" for f in self.frames)

    @property
    def last_seq(self) -> int:
        """The number of the latest frame, either direction (0 before any)."""
        return self._seq

    async def close(self) -> None:
        """Release what the responder holds, cancel the answering tasks, close the
        transport (errors ignored) and end every wait. Idempotent."""
        self.responder.release_held()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await self.transport.close()
        self._finish()

    # -- receiving ----------------------------------------------------------------------

    def _keep(
        self, direction: Literal["in", "out"], raw: bytes, message: Any, problem: str
    ) -> Frame:
        self._seq += 1
        frame = Frame(
            self._seq,
            time.monotonic() - self._start,
            direction,
            raw[:KEEP_LIMIT],
            len(raw),
            message,
            problem,
        )
        if len(self.frames) < MAX_FRAMES:
            self.frames.append(frame)
        else:
            self.log.dropped_frames += 1
        return frame

    def _on_data(self, data: bytes) -> None:
        for event in self._decoder.feed(data):
            self._event(event)

    def _on_eof(self) -> None:
        for event in self._decoder.feed_eof():
            self._event(event)
        self._finish()

    def _finish(self) -> None:
        self.closed.set()
        for waiter in self._waiters:
            if not waiter.future.done():
                waiter.future.set_result(None)  # the connection is over: nothing will come

    def _event(self, event: bytes | Oversized | FramingError) -> None:
        if isinstance(event, Oversized):
            problem = f"a line of {event.size} bytes (the checker reads at most {MAX_LINE})"
            frame = self._keep("in", event.prefix, NOT_JSON, problem)
        elif isinstance(event, FramingError):
            frame = self._keep("in", b"", NOT_JSON, event.detail)
        else:
            message, problem = parse(event)
            frame = self._keep("in", event, message, problem)
        if frame.message is not NOT_JSON:
            self._dispatch(frame)
        for waiter in list(self._waiters):
            if not waiter.future.done() and waiter.predicate(frame):
                waiter.future.set_result(frame)

    def _dispatch(self, frame: Frame) -> None:
        answered: str | None = None
        if frame.is_response:
            key = _key_of(frame)
            answered = self._methods.get(key)
            if answered is None:
                self.log.unmatched.append(frame)
            elif answered == BAD_INPUT:
                answered = None  # any number of answers, nothing to validate the result by
            elif key in self._answered:
                self.log.duplicates.append(frame)
            else:
                self._answered[key] = frame
        if self.validator is not None:
            for violation in self.validator.validate(
                frame.message, sender=self.peer, answered_method=answered
            ):
                self.log.schema.append(SchemaProblem(frame, violation))
        if frame.is_request:
            # Owner: this probe; `close` cancels what is still running.
            task = asyncio.get_running_loop().create_task(self._answer(frame))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer(self, frame: Frame) -> None:
        kind, value = await self.responder.answer(frame)
        if self.closed.is_set():
            return
        self.send({"jsonrpc": "2.0", "id": frame.message["id"], kind: value})


def _any_frame(frame: Frame) -> bool:
    return True


def _key_of(frame: Frame) -> str:
    return id_key(frame.message.get("id"))
