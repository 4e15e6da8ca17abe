"""How many copies of a big POST body the server makes on its way to an in-process agent:
the body read into one buffer, the pipe handing a big frame and its newline over as two
chunks, and the frame decoder taking that frame as it is (the same bytes object)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from acpstack.server._asgi import BodyRefused, Message, Receive, read_body
from acpstack.server._pipe import JOIN_LIMIT, pipe_pair
from acpstack.wire import FrameDecoder


def receiver(*chunks: bytes, disconnect: bool = False) -> Receive:
    messages: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    if disconnect:
        messages = [*messages[:-1], {"type": "http.disconnect"}]

    async def receive() -> Message:
        return messages.pop(0)

    return receive


async def test_a_body_in_one_chunk_is_taken_as_it_is() -> None:
    chunk = b'{"jsonrpc":"2.0","method":"x"}' * 100
    assert await read_body(receiver(chunk), 10_000, 5) is chunk


async def test_a_body_in_many_chunks_is_one_bytes_object() -> None:
    chunks = [bytes([65 + i]) * 70_000 for i in range(5)]
    body = await read_body(receiver(*chunks), 1_000_000, 5)
    assert type(body) is bytes and body == b"".join(chunks)
    assert await read_body(receiver(b"", b"{}"), 10, 5) == b"{}"


async def test_a_body_over_the_limit_or_abandoned() -> None:
    with pytest.raises(BodyRefused) as refused:
        await read_body(receiver(b"a" * 600, b"a" * 600), 1000, 5)
    assert refused.value.status == 413
    assert await read_body(receiver(b"a" * 600, b"a" * 600, disconnect=True), 10_000, 5) is None


async def through_pipe(frames: list[bytes]) -> list[bytes]:
    """The chunks the reading end gets when each frame is written, then its newline."""
    writer, reader = pipe_pair()
    got: list[bytes] = []
    ended = asyncio.Event()
    reader.start_reading(got.append, ended.set)
    for frame in frames:
        writer.write(frame)
        writer.write(b"\n")
    await writer.close()
    await asyncio.wait_for(ended.wait(), 5)
    return got


async def test_the_pipe_hands_a_big_frame_over_without_copying_it() -> None:
    big = b'{"jsonrpc":"2.0","method":"x","params":{"pad":"' + b"a" * JOIN_LIMIT + b'"}}'
    chunks = await through_pipe([big])
    assert chunks == [big, b"\n"] and chunks[0] is big
    decoder = FrameDecoder(2 * JOIN_LIMIT, "ndjson")
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    assert events == [big] and events[0] is big


async def test_the_pipe_joins_small_frames_into_whole_lines() -> None:
    small = [b'{"id":1,"result":{}}', b'{"id":2,"result":{}}']
    assert await through_pipe(small) == [b"".join(f + b"\n" for f in small)]


def test_a_pretty_printed_body_is_put_on_one_line_without_decoding_it() -> None:
    from acpstack.transports import single_line

    body = b'{\r\n  "jsonrpc": "2.0",\n  "method": "x",\n  "params": {"t": "a\\nb"}\n}\n'
    line = single_line(body)
    assert b"\n" not in line and b"\r" not in line
    assert msgspec.json.decode(line) == msgspec.json.decode(body)  # the same message
    with pytest.raises(msgspec.DecodeError):  # a raw line break inside a string stays refused
        single_line(b'{"t": "a\nb"}')
