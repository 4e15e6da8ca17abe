"""The server's outbound streams: positions, the replay buffer and resuming from a
position (what `Last-Event-ID` asks for), and one receiver taking over from another."""

from __future__ import annotations

import pytest

from acpstack.server._streams import OutboundStream, ResumeRefused
from acpstack.transports._sse import SseDecoder


def make(replay_bytes: int = 1024) -> tuple[OutboundStream, list[int]]:
    sizes: list[int] = []
    return OutboundStream("s", sizes.append, replay_bytes), sizes


def test_messages_are_numbered_from_one_and_kept_after_they_are_taken() -> None:
    stream, sizes = make()
    for frame in (b"a", b"bb", b"ccc"):
        stream.push(frame)
    assert stream.take() == (1, [b"a", b"bb", b"ccc"])
    stream.push(b"d")
    assert stream.take() == (4, [b"d"])
    assert sum(sizes) == 0  # what waits to be sent is back to nothing
    stream.resume(2)  # the receiver has 1 and 2
    assert stream.take() == (3, [b"ccc", b"d"])
    assert stream.position == 4


def test_resuming_twice_from_the_same_point_gives_the_same_messages() -> None:
    stream, _ = make()
    for frame in (b"a", b"b", b"c"):
        stream.push(frame)
    stream.take()
    stream.resume(1)
    assert stream.take() == (2, [b"b", b"c"])
    stream.resume(1)
    assert stream.take() == (2, [b"b", b"c"])


def test_what_was_not_sent_yet_follows_what_is_sent_again() -> None:
    stream, sizes = make()
    stream.push(b"a")
    stream.push(b"b")
    stream.take()
    stream.push(b"c")  # waiting
    stream.resume(0)
    assert sum(sizes) == 3  # a, b and c wait now (backpressure counts them)
    assert stream.take() == (1, [b"a", b"b", b"c"])


def test_a_position_older_than_the_replay_buffer_is_refused() -> None:
    stream, _ = make(replay_bytes=4)
    for frame in (b"aaa", b"bbb", b"ccc"):
        stream.push(frame)
    stream.take()  # only "ccc" fits in 4 bytes
    with pytest.raises(ResumeRefused, match="no longer held"):
        stream.resume(1)
    stream.resume(2)
    assert stream.take() == (3, [b"ccc"])


def test_a_position_never_sent_is_refused() -> None:
    stream, _ = make()
    stream.push(b"a")
    stream.take()
    with pytest.raises(ResumeRefused, match="never sent"):
        stream.resume(2)
    with pytest.raises(ResumeRefused):
        stream.resume(-1)


def test_without_a_replay_buffer_only_the_last_position_resumes() -> None:
    stream, _ = make(replay_bytes=0)
    stream.push(b"a")
    stream.take()
    stream.resume(1)
    with pytest.raises(ResumeRefused):
        stream.resume(0)


def test_a_second_receiver_is_refused_unless_it_takes_over() -> None:
    stream, _ = make()
    first = stream.attach()
    assert first and stream.current(first)
    assert stream.attach() == 0
    second = stream.attach(takeover=True)
    assert second and stream.current(second) and not stream.current(first)
    stream.detach(first)  # the old receiver leaving does not detach the new one
    assert stream.attached
    stream.detach(second)
    assert not stream.attached


def test_the_sse_decoder_keeps_the_last_event_id() -> None:
    decoder = SseDecoder(1024)
    assert decoder.feed(b"id: 1\ndata: {}\n\nid: 2\ndata: [1]\n\n") == [b"{}", b"[1]"]
    assert decoder.last_id == "2"
    assert decoder.feed(b":\n\n") == []  # a keepalive changes nothing
    assert decoder.last_id == "2"
    assert decoder.feed(b"data: a\ndata: b\nid: 7\n\n") == [b"a\nb"]
    assert decoder.last_id == "7"
    assert decoder.feed(b"id: 8\n\n") == []  # an id without data still counts
    assert decoder.last_id == "8"
    decoder.reset()
    assert decoder.last_id == "8"


def test_the_sse_decoder_counts_the_events_after_the_last_id() -> None:
    decoder = SseDecoder(1024)
    assert decoder.position() is None
    assert decoder.feed(b"id: 7\ndata: a\n\ndata: b\n\ndata: c\n\n") == [b"a", b"b", b"c"]
    assert decoder.position() == "9"  # c is position 9
    assert decoder.feed(b"id: 10\ndata: d\n\n") == [b"d"]
    assert decoder.position() == "10"
    assert decoder.feed(b"data: e\n") == []  # not complete: not counted
    assert decoder.position() == "10"
    assert decoder.feed(b"\n") == [b"e"]
    assert decoder.position() == "11"
