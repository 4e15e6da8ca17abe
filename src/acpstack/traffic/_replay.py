"""`acpstack replay`: send the client side of a recording to an agent again and report
where its answers differ from the recorded ones.

How the client side is replayed:
- client requests and notifications go out in recorded order, with their recorded ids;
  before each one the replay waits until the requests answered before it in the recording
  are answered again, and until the agent has sent as many messages as it had by then (or
  has been quiet for a moment: a model may say things differently);
- requests from the agent are answered with the recorded client answer to the same
  method's request at the same position (the 2nd fs/read_text_file gets the 2nd answer);
- session ids the agent hands out are mapped: the replay uses the new ids, the comparison
  the recorded ones.

What is compared (the rules, see `normalize`): every response to a client request, and per
session the sequence of updates and requests the agent sent, after these normalizations:
`_meta` is dropped; generated ids (toolCallId, terminalId, messageId, elicitationId,
planId, sessionId) become `id-1`, `id-2`, ... in order of first appearance; date-time
strings and `updatedAt`/`lastModified` become `<time>`; consecutive message, thought and
user chunks are joined into one text (chunk boundaries differ from run to run).

The agent runs for real: what it does by itself happens again. Its fs/* and terminal/*
requests get the recorded answers (nothing is read, written or run for them), but a
protocol v2 agent has no such methods: it edits files and runs commands itself, in the
recorded session's cwd. The replay says so before it starts (`replay_notes`).
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acpstack.conformance import AgentTarget, Answer, Frame, Probe
from acpstack.traffic._record import Record, obj

GENERATED_IDS = frozenset(
    {"toolCallId", "terminalId", "messageId", "elicitationId", "planId", "sessionId"}
)
TIME_KEYS = frozenset({"updatedAt", "lastModified"})
_DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")
CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
MAX_DIFFERENCES = 50


@dataclass(frozen=True)
class Difference:
    """One place where the replayed answers differ from the recorded ones."""

    where: str
    """Which answer, or which session's stream of updates and requests."""
    path: str
    """The JSON path inside it."""
    recorded: str
    """The recorded value (shortened)."""
    replayed: str
    """The value of the replay (shortened)."""

    def __str__(self) -> str:
        return f"{self.where} at {self.path}: recorded {self.recorded}, replayed {self.replayed}"


@dataclass
class ReplayReport:
    """What `replay_recording` found."""

    requests: int = 0
    """How many client requests were replayed."""
    differences: list[Difference] = field(default_factory=list)
    """Where the answers differ after normalization (the first 50), and requests the agent made that
    the recording does not have."""
    seconds: float = 0.0
    """How long the replay took."""
    notes: list[str] = field(default_factory=list)
    """What to know about the replay (see `replay_notes`)."""

    @property
    def exit_code(self) -> int:
        """0 when nothing differs, else 1."""
        return 1 if self.differences else 0


def normalize(value: Any, ids: dict[str, dict[Any, str]] | None = None, key: str = "") -> Any:
    """The comparable form of a message part (see the module docstring for the rules)."""
    ids = {} if ids is None else ids
    if isinstance(value, dict):
        return {k: normalize(v, ids, k) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [normalize(v, ids, key) for v in value]
    if key in GENERATED_IDS and isinstance(value, str | int):
        seen = ids.setdefault(key, {})
        return seen.setdefault(value, f"id-{len(seen) + 1}")
    if key in TIME_KEYS or (isinstance(value, str) and _DATE_TIME.match(value)):
        return "<time>"
    return value


def stream_items(frames: Sequence[Any]) -> dict[str, list[Any]]:
    """Per session, what the agent sent (updates and requests), chunks joined. Prompts of
    the client in `frames` mark where a turn starts (chunks never join across turns)."""
    items: dict[str, list[Any]] = defaultdict(list)
    for message in frames:
        params = obj(message.get("params"))
        session = str(params.get("sessionId", ""))
        if message.get("method") == "session/prompt":
            items[session].append({"turn": "a session/prompt of the client"})
            continue
        update = params.get("update")
        if message.get("method") == "session/update" and isinstance(update, dict):
            kind = update.get("sessionUpdate")
            content = obj(update.get("content"))
            stream = items[session]
            if kind in CHUNKS and content.get("type") == "text":
                if stream and isinstance(stream[-1], dict) and stream[-1].get("joined") == kind:
                    stream[-1]["text"] += str(content.get("text", ""))
                else:
                    stream.append({"joined": kind, "text": str(content.get("text", ""))})
                continue
            stream.append({"update": update})
        else:
            items[session].append({"request": message.get("method"), "params": params})
    return items


def diff(recorded: Any, replayed: Any, where: str, path: str = "$") -> list[Difference]:
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out: list[Difference] = []
        for key in [*recorded, *(k for k in replayed if k not in recorded)]:
            out += diff(
                recorded.get(key, "<absent>"), replayed.get(key, "<absent>"), where, f"{path}.{key}"
            )
        return out
    if isinstance(recorded, list) and isinstance(replayed, list):
        out = []
        for index in range(max(len(recorded), len(replayed))):
            a = recorded[index] if index < len(recorded) else "<absent>"
            b = replayed[index] if index < len(replayed) else "<absent>"
            out += diff(a, b, where, f"{path}[{index}]")
        return out
    if recorded == replayed:
        return []
    return [Difference(where, path, _short(recorded), _short(replayed))]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


@dataclass
class _Recorded:
    """A recording taken apart for replaying."""

    client: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    answers: dict[str, deque[Answer]] = field(default_factory=lambda: defaultdict(deque))
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)  # id key -> response
    answered_at: dict[str, int] = field(default_factory=dict)  # id key -> position
    agent_before: list[int] = field(default_factory=list)  # agent messages before position
    #: what the agent sent (requests, notifications) and the client's prompts, in order
    stream: list[dict[str, Any]] = field(default_factory=list)


def _key(value: Any) -> str:
    return json.dumps(value)


def negotiated_version(records: Sequence[Record]) -> int | None:
    """The protocol version the agent answered the recorded `initialize` with (None when
    the recording has no such answer)."""
    asked: set[str] = set()
    for record in records:
        message = record.message if record.is_message else None
        if not isinstance(message, dict):
            continue
        if record.side == "client" and message.get("method") == "initialize":
            asked.add(_key(message.get("id")))
        elif (
            record.side == "agent" and "method" not in message and _key(message.get("id")) in asked
        ):
            version = obj(message.get("result")).get("protocolVersion")
            return version if type(version) is int else None
    return None


def replay_notes(records: Sequence[Record]) -> list[str]:
    """What a person should know before replaying `records`: a v2 recording makes the
    agent change the recorded workspaces again (a v2 agent edits files and runs commands
    itself; there are no client answers to replay instead)."""
    if (negotiated_version(records) or 1) < 2:
        return []
    cwds = sorted(
        {
            str(obj(r.message.get("params")).get("cwd"))
            for r in records
            if r.side == "client"
            and r.is_message
            and isinstance(r.message, dict)
            and r.message.get("method") in ("session/new", "session/load", "session/resume")
            and isinstance(obj(r.message.get("params")).get("cwd"), str)
        }
    )
    where = ", ".join(cwds) if cwds else "the recorded sessions' working directories"
    return [
        "the recording speaks protocol v2: a v2 agent edits files and runs commands itself "
        f"(no fs or terminal requests the replay could answer), so the replay does it "
        f"again in {where}; replay in a copy of the workspace (and record there) if that "
        "matters"
    ]


def _split(records: Sequence[Record]) -> _Recorded:
    rec = _Recorded()
    agent_requests: dict[str, str] = {}  # id key -> method
    count = 0
    messages = [r for r in records if r.is_message and isinstance(r.message, dict)]
    for position, record in enumerate(messages):
        message = record.message
        rec.agent_before.append(count)
        is_call = isinstance(message.get("method"), str)
        if record.side == "client":
            if is_call:
                rec.client.append((position, message))
                if message.get("method") == "session/prompt":
                    rec.stream.append(message)
            elif _key(message.get("id")) in agent_requests:
                method = agent_requests.pop(_key(message.get("id")))
                kind: Literal["error", "result"] = "error" if "error" in message else "result"
                rec.answers[method].append((kind, message.get(kind)))
            continue
        count += 1
        if is_call:
            rec.stream.append(message)
            if "id" in message:
                agent_requests[_key(message["id"])] = message["method"]
        else:
            rec.responses[_key(message.get("id"))] = message
            rec.answered_at[_key(message.get("id"))] = position
    return rec


class _RecordedClient:
    """Answers the agent's requests with the recorded answers, in order per method."""

    def __init__(self, answers: dict[str, deque[Answer]]) -> None:
        self.answers = answers
        self.unexpected: list[str] = []

    async def answer(self, frame: Frame) -> Answer:
        queue = self.answers.get(frame.method or "")
        if queue:
            return queue.popleft()
        self.unexpected.append(frame.method or "?")
        return "error", {"code": -32603, "message": "acpstack replay: not in the recording"}

    def cancel_session(self, session_id: str) -> None:
        return None

    def release_held(self) -> None:
        return None


def _swap(value: Any, mapping: dict[str, str]) -> Any:
    """`value` with every string found in `mapping` replaced (session ids)."""
    if isinstance(value, dict):
        return {k: _swap(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, mapping) for v in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


async def replay_recording(
    records: Sequence[Record],
    target: AgentTarget,
    *,
    timeout: float = 30.0,
    quiet: float = 2.0,
    on_note: Callable[[str], None] | None = None,
) -> ReplayReport:
    """Replay the client side of `records` against `target` and compare the answers.
    `on_note` hears what to know about the replay before the agent starts (see the
    module doc: a v2 agent changes the recorded workspace again); the report keeps it in
    `notes` too."""
    began = time.monotonic()
    notes = replay_notes(records)
    if on_note is not None:
        for note in notes:
            on_note(note)
    rec = _split(records)
    responder = _RecordedClient(rec.answers)
    transport = await target.open(shutdown_timeout=5.0)
    probe = Probe(transport, responder, None)
    probe.start()
    forward: dict[str, str] = {}  # recorded session id -> replayed one
    try:
        for position, message in rec.client:
            await _wait_causes(probe, rec, position, forward, timeout, quiet)
            outgoing = _swap(message, forward)
            if outgoing.get("method") == "session/cancel":
                probe.notify("session/cancel", outgoing.get("params"))
            else:
                probe.send(outgoing)
        for key in rec.responses:
            await _settle_reply(probe, rec, key, forward, timeout)
        await probe.quiet(quiet, limit=quiet * 3)
    finally:
        await probe.close()
    report = _compare(rec, probe, forward, responder)
    report.notes = notes
    report.seconds = time.monotonic() - began
    return report


async def _wait_causes(
    probe: Probe,
    rec: _Recorded,
    position: int,
    forward: dict[str, str],
    timeout: float,
    quiet: float,
) -> None:
    for key, answered in rec.answered_at.items():
        if answered < position:
            await _settle_reply(probe, rec, key, forward, timeout)
    wanted = rec.agent_before[position]
    while sum(1 for f in probe.frames if f.direction == "in") < wanted:
        seen = probe.last_seq
        if await probe.wait_for(lambda f: True, quiet, after=seen) is None:
            break


async def _settle_reply(
    probe: Probe, rec: _Recorded, key: str, forward: dict[str, str], timeout: float
) -> None:
    """Wait for the replayed answer to the client request `key`; learn session ids from it."""
    reply = await probe.reply(json.loads(key), timeout=timeout)
    recorded = rec.responses.get(key, {}).get("result")
    if reply.status == "result" and isinstance(recorded, dict) and isinstance(reply.result, dict):
        old, new = recorded.get("sessionId"), reply.result.get("sessionId")
        if isinstance(old, str) and isinstance(new, str):
            forward.setdefault(old, new)


def _compare(
    rec: _Recorded, probe: Probe, forward: dict[str, str], responder: _RecordedClient
) -> ReplayReport:
    back = {new: old for old, new in forward.items()}
    report = ReplayReport(requests=sum(1 for _, m in rec.client if "id" in m))
    ids_recorded: dict[str, dict[Any, str]] = {}
    ids_replayed: dict[str, dict[Any, str]] = {}
    replayed = {
        _key(f.message.get("id")): f.message
        for f in probe.frames
        if f.direction == "in" and f.is_response
    }
    found: list[Difference] = []
    for _, message in rec.client:
        key = _key(message.get("id"))
        if "id" not in message or key not in rec.responses:
            continue
        where = f"answer to {message.get('method')} (id {message.get('id')})"
        got = replayed.get(key)
        if got is None:
            found.append(Difference(where, "$", "an answer", "no answer"))
            continue
        strip = ("jsonrpc", "id")
        before = normalize(
            {k: v for k, v in rec.responses[key].items() if k not in strip}, ids_recorded
        )
        after = normalize(
            _swap({k: v for k, v in got.items() if k not in strip}, back), ids_replayed
        )
        found += diff(before, after, where)
    sent = [
        _swap(f.message, back)
        for f in probe.frames
        if (f.direction == "in" and f.method) or f.method == "session/prompt"
    ]
    streams_before, streams_after = stream_items(rec.stream), stream_items(sent)
    for session in [*streams_before, *(s for s in streams_after if s not in streams_before)]:
        where = f"what the agent sent for session {session or '(none)'}"
        a = normalize(streams_before.get(session, []), ids_recorded)
        b = normalize(streams_after.get(session, []), ids_replayed)
        found += diff(a, b, where)
    found += [
        Difference(f"agent request {m}", "$", "not asked", "asked") for m in responder.unexpected
    ]
    report.differences = found[:MAX_DIFFERENCES]
    return report
