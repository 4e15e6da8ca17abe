"""The forwarding path's own rules: what one read produces leaves in one write per link,
a message forwarded unchanged is the bytes it came in, envelopes are built around raw params.
Links run on memory transports (each write arrives as one chunk, so writes can be counted)."""

from __future__ import annotations

import asyncio
import json

import pytest
from msgspec import UNSET, Raw, UnsetType

from acpstack.proxy._link import Link, Message, Outbox, RequestId, envelope
from acpstack.transports import memory_pair

pytestmark = pytest.mark.timeout(30)


class Forward:
    """Sends every notification it gets on to `to`, as the bytes it came in."""

    def __init__(self) -> None:
        self.to: Link | None = None

    def on_notification(self, link: Link, message: Message) -> None:
        assert self.to is not None
        self.to.send_frame(link.frame + b"\n")

    def on_request(self, link: Link, message: Message, rid: RequestId) -> None:
        link.fail(rid, -32601, "no requests here")

    def on_closed(self, link: Link, reason: str) -> None:
        pass


async def test_the_frames_of_one_read_leave_unchanged_in_one_write() -> None:
    in_ours, in_theirs = memory_pair()
    out_ours, out_theirs = memory_pair()
    handler, outbox = Forward(), Outbox()
    inbound = Link(in_ours, "in", handler, outbox)
    handler.to = Link(out_ours, "out", handler, outbox)
    chunks: list[bytes] = []
    arrived = asyncio.Event()

    def on_data(data: bytes) -> None:
        chunks.append(data)
        if b"".join(chunks).count(b"\n") >= 3:
            arrived.set()

    out_theirs.start_reading(on_data, lambda: None)
    inbound.start()
    handler.to.start()
    # Odd spacing and member order: forwarded unchanged, they must survive byte for byte.
    frames = [
        b'{"params" : {"i": %d, "x":[1 ,2]},"jsonrpc":"2.0","method":"n"}' % i for i in (1, 2, 3)
    ]
    in_theirs.write(b"\n".join(frames) + b"\n")
    await asyncio.wait_for(arrived.wait(), 10)
    assert chunks == [b"\n".join(frames) + b"\n"]
    await in_theirs.close()
    await out_theirs.close()


@pytest.mark.parametrize("rid", [UNSET, 7, "r-1"])
@pytest.mark.parametrize("params", [UNSET, Raw(b'{"a": [1, {"b": null}], "t": "\\u00e9"}')])
def test_an_envelope_is_the_message_wrapping_the_raw_params(
    rid: RequestId | UnsetType, params: Raw | UnsetType
) -> None:
    frame = envelope("proxy/successor", "session/update", params, rid)
    assert frame.endswith(b"\n") and frame.count(b"\n") == 1
    inner: dict[str, object] = {"method": "session/update"}
    if params is not UNSET:
        inner["params"] = json.loads(bytes(params))
    expected: dict[str, object] = {"jsonrpc": "2.0", "method": "proxy/successor", "params": inner}
    if rid is not UNSET:
        expected["id"] = rid
    assert json.loads(frame) == expected
