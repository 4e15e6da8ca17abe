"""CPU per streamed message chunk (`agent_message_chunk`, a 40-byte text, with its message
id as `Turn` sends it): the event model's codecs against today's paths, in one run.

    python tests/events/bench_event_codecs.py [--n 200000] [--reps 5]

Each figure is the best of `reps` runs of `n` calls, in process CPU time (ns per call).
Not a pytest test (the file name says so): run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import msgspec

from acpstack import events as ev
from acpstack.agent._v2_convert import MessageIds, update_to_v2
from acpstack.client import _v2_view as view
from acpstack.schema import v1, v2

TEXT = "x" * 40
V1_CHUNK = v1.AgentMessageChunk(content=v1.TextContent(text=TEXT), message_id="m1")
EVENT = ev.AgentMessageChunk(content=v1.TextContent(text=TEXT), message_id="m1")
NO_ID = ev.AgentMessageChunk(content=v1.TextContent(text=TEXT))
V1_NO_ID = v1.AgentMessageChunk(content=v1.TextContent(text=TEXT))
BYTES = msgspec.json.encode(V1_CHUNK)

NOTE = b'{"sessionId":"s1","update":' + BYTES + b"}"


class EventNotification(msgspec.Struct):
    """`session/update` params with the update read as an event (how the wire would hold it)."""

    sessionId: str  # noqa: N815 (the wire's name)
    update: ev.KnownEvent


_encode = msgspec.json.Encoder().encode
_v1_decode = msgspec.json.Decoder(v1.SessionUpdate).decode
_v2_decode = msgspec.json.Decoder(v2.SessionUpdate).decode


def _today_v2_client(data: bytes) -> Any:
    """The v2 client today: decode as v2, then the model's v1 chunk (`_v2_view`)."""
    update = _v2_decode(data)
    return v1.AgentMessageChunk(content=view.block(update.content), message_id=update.message_id)


_OWN = frozenset({v1.AgentMessageChunk})


def _today_v2_agent_own_id(ids: MessageIds) -> bytes | None:
    """A chunk with its own id on a v2 session today (`V2Session.wire_form`): sent as the
    v1 encoding, the id run noted."""
    payload = _encode(V1_CHUNK)
    if type(V1_CHUNK) in _OWN and isinstance(V1_CHUNK.message_id, str):
        ids.message("", "own")
        return payload
    return None


def _today_v2_agent_no_id(ids: MessageIds) -> bytes:
    """A chunk without its own id on a v2 session today: encode, decode, convert, encode."""
    payload = _encode(V1_NO_ID)
    return _encode(update_to_v2(msgspec.json.decode(payload), ids)[0])


def once(fn: Callable[[], object], n: int) -> float:
    start = time.process_time_ns()
    for _ in range(n):
        fn()
    return (time.process_time_ns() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    old_ids, new_ids = MessageIds("m"), ev.MessageIds("m")
    assert ev.v1.decode(BYTES) == EVENT and ev.v1.encode(EVENT) == BYTES
    assert ev.v2.encode(EVENT, new_ids) == BYTES
    note_v1 = msgspec.json.Decoder(v1.SessionNotification).decode
    note_ev = msgspec.json.Decoder(EventNotification).decode
    event_decode = msgspec.json.Decoder(ev.KnownEvent).decode
    pairs = [
        ("v1 params -> SessionNotification: today", lambda: note_v1(NOTE)),
        ("v1 params -> EventNotification (one pass)", lambda: note_ev(NOTE)),
        ("v1 JSON -> event: Decoder(KnownEvent), bare", lambda: event_decode(BYTES)),
        ("v1 JSON -> update: today (v1.SessionUpdate)", lambda: _v1_decode(BYTES)),
        ("v1 JSON -> event: events.decode_event", lambda: ev.decode_event(BYTES)),
        ("v1 JSON -> event: events.v1.decode", lambda: ev.v1.decode(BYTES)),
        ("v2 JSON -> client model: today (v2 decode + _v2_view)", lambda: _today_v2_client(BYTES)),
        ("v2 JSON -> event: events.v2.decode", lambda: ev.v2.decode(BYTES)),
        ("v1 update -> v1 bytes: today (encode the v1 struct)", lambda: _encode(V1_CHUNK)),
        ("event -> stored bytes (= v1 wire): events.encode_event", lambda: ev.encode_event(EVENT)),
        ("event -> v1 bytes: events.v1.encode", lambda: ev.v1.encode(EVENT)),
        (
            "v1 update, own id -> v2 bytes: today (V2Session)",
            lambda: _today_v2_agent_own_id(old_ids),
        ),
        ("event -> v2 bytes, own id: events.v2.encode", lambda: ev.v2.encode(EVENT, new_ids)),
        (
            "v1 update, no id -> v2 bytes: today (_v2_convert)",
            lambda: _today_v2_agent_no_id(old_ids),
        ),
        ("event, no id -> v2 bytes: events.v2.encode", lambda: ev.v2.encode(NO_ID, new_ids)),
    ]
    best = [float("inf")] * len(pairs)
    for _ in range(args.reps):  # interleaved, so that a busy moment hits every path
        for i, (_, fn) in enumerate(pairs):
            best[i] = min(best[i], once(fn, args.n))
    print(f"{'path':58} ns/chunk  (best of {args.reps} x {args.n}, interleaved)")
    for (name, _), ns in zip(pairs, best, strict=True):
        print(f"{name:58} {ns:8.0f}")


if __name__ == "__main__":
    main()
