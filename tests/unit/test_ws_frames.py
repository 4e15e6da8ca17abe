"""`WebSocketFrames`, the hot path of the WebSocket profile: whole text frames cut and
unmasked by it, every other frame handed whole to `websockets` (checked against that
library's own framing, both directions, cut at every byte)."""

from __future__ import annotations

import random

from websockets.frames import Frame, Opcode

from acpstack.transports import RawFrame, WebSocketFrames


def wire(frames: list[Frame], *, mask: bool) -> bytes:
    """The bytes of `frames` as `websockets` writes them."""
    return b"".join(f.serialize(mask=mask, extensions=[]) for f in frames)


def split_in_pieces(splitter: WebSocketFrames, data: bytes, rng: random.Random) -> list[bytes]:
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 7)
        out += splitter.split(data[pos : pos + step])
        pos += step
    return out


def test_text_frames_come_out_whole_and_the_rest_goes_to_the_protocol() -> None:
    big = b'{"t":"' + b"x" * 70_000 + b'"}'
    frames = [
        Frame(Opcode.TEXT, b'{"a":1}'),
        Frame(Opcode.PING, b"hi"),
        Frame(Opcode.TEXT, big),
        Frame(Opcode.TEXT, b"part", fin=False),
        Frame(Opcode.CONT, b"-rest"),  # a fragmented message: the protocol's
        Frame(Opcode.BINARY, b"\x00\x01"),
        Frame(Opcode.TEXT, b"[" + b"1," * 200 + b"1]"),
    ]
    for client in (True, False):  # a client reads unmasked frames, a server masked ones
        data = wire(frames, mask=not client)
        for seed in range(5):
            out = split_in_pieces(
                WebSocketFrames(client=client, max_size=1 << 20), data, random.Random(seed)
            )
            texts = [bytes(o) for o in out if type(o) is not RawFrame]
            raw = [o for o in out if type(o) is RawFrame]
            assert texts == [b'{"a":1}', big, b"[" + b"1," * 200 + b"1]"]
            assert len(raw) == 4  # ping, the two parts of the fragmented one, binary
            assert all(frame in data for frame in raw)  # whole frames, untouched
            expected = [wire([f], mask=not client) for f in (frames[1], *frames[3:6])]
            assert [len(frame) for frame in raw] == [len(e) for e in expected]


def test_a_frame_over_the_limit_passes_everything_to_the_protocol() -> None:
    splitter = WebSocketFrames(client=True, max_size=100)
    data = wire([Frame(Opcode.TEXT, b"x" * 200), Frame(Opcode.TEXT, b"y")], mask=False)
    out = splitter.split(data[:10])
    assert out == [RawFrame(data[:10])] and splitter.passthrough
    assert splitter.split(data[10:]) == [RawFrame(data[10:])]


def test_frames_made_here_are_read_by_websockets() -> None:
    from websockets.streams import StreamReader

    for client in (True, False):
        data = WebSocketFrames(client=client, max_size=1 << 20).text_frames(
            [b"a", b"b" * 300, b"c" * 70_000]
        )
        reader = StreamReader()
        reader.feed_data(data)
        parser = Frame.parse(reader.read_exact, mask=client, max_size=None, extensions=[])
        payloads = []
        for _ in range(3):
            try:
                next(parser)
            except StopIteration as done:
                payloads.append(done.value.data)
            parser = Frame.parse(reader.read_exact, mask=client, max_size=None, extensions=[])
        assert payloads == [b"a", b"b" * 300, b"c" * 70_000]


def test_a_clients_frames_read_back_through_websockets_past_a_thousand_keys() -> None:
    """The client's masking keys come from the OS's random source in blocks of 1,024: the
    frames stay valid for `websockets` across the refills, and no key is all zeros more
    often than chance (each is 4 fresh random bytes)."""
    from websockets.streams import StreamReader

    maker = WebSocketFrames(client=True, max_size=1 << 20)
    messages = [b'{"n":%d}' % i for i in range(2500)]
    data = maker.text_frames(messages[:1000]) + maker.text_frames(messages[1000:])
    reader = StreamReader()
    reader.feed_data(data)
    parsed = []
    keys = []
    for _ in messages:
        parser = Frame.parse(reader.read_exact, mask=True, max_size=None, extensions=[])
        try:
            next(parser)
        except StopIteration as done:
            parsed.append(done.value.data)
    pos = 0
    for message in messages:  # header 2 bytes (short payloads), key 4, payload
        keys.append(data[pos + 2 : pos + 6])
        pos += 6 + len(message)
    assert parsed == messages
    assert len(set(keys)) > 2400  # 4-byte random keys: a few repeats at most by chance
