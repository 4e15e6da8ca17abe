"""Tests for the sans-IO framing layer (acpstack.wire._framing)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpstack.wire import _ndjson
from acpstack.wire._framing import (
    DEFAULT_MAX_MESSAGE_SIZE,
    MAX_HEADER_SIZE,
    PREFIX_SIZE,
    FrameDecoder,
    FrameEvent,
    FramingError,
    Oversized,
    encode_frame,
)

KiB = 1024
MiB = 1024 * KiB


def run(
    chunks: Iterable[bytes],
    *,
    framing: str = "auto",
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> list[FrameEvent]:
    """Feed all chunks then EOF to a fresh decoder; return every event."""
    dec = FrameDecoder(max_message_size, framing)
    out: list[FrameEvent] = []
    for chunk in chunks:
        out += dec.feed(chunk)
    out += dec.feed_eof()
    return out


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    points = sorted({min(max(c, 0), len(data)) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def is_blank(b: bytes) -> bool:
    return not b or b.isspace()


def looks_like_headers(stream: bytes) -> bool:
    """Whether "auto" framing picks content-length for this stream."""
    return stream.lstrip().lower().startswith((b"content-length:", b"content-type:"))


# -- NDJSON basics ------------------------------------------------------------------


def test_several_messages_in_one_chunk() -> None:
    dec = FrameDecoder(framing="ndjson")
    assert dec.feed(b'{"a":1}\n{"b":2}\n{"c":3}\n') == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
    assert dec.feed_eof() == []
    assert dec.buffered == 0


def test_message_split_across_chunks() -> None:
    dec = FrameDecoder(framing="ndjson")
    assert dec.feed(b'{"jsonrpc":') == []
    assert dec.buffered == len(b'{"jsonrpc":')
    assert dec.feed(b'"2.0",') == []
    assert dec.feed(b'"id":1}\n{"x"') == [b'{"jsonrpc":"2.0","id":1}']
    assert dec.feed(b":2}\n") == [b'{"x":2}']
    assert dec.buffered == 0


def test_crlf_lines() -> None:
    assert run([b'{"a":1}\r\n{"b":2}\r\n'], framing="ndjson") == [b'{"a":1}', b'{"b":2}']
    # \r and \n in different chunks
    assert run([b'{"a":1}\r', b'\n{"b":2}\r', b"\n"], framing="ndjson") == [
        b'{"a":1}',
        b'{"b":2}',
    ]


def test_only_one_trailing_cr_is_stripped() -> None:
    assert run([b"abc\r\r\n"], framing="ndjson") == [b"abc\r"]


def test_lone_cr_is_not_a_separator() -> None:
    assert run([b"a\rb\n"], framing="ndjson") == [b"a\rb"]


def test_blank_lines_are_skipped() -> None:
    data = b'\n\n  \r\n\t\x0b\x0c\n{"a":1}\n\r\n\n{"b":2}\n   \n'
    assert run([data], framing="ndjson") == [b'{"a":1}', b'{"b":2}']
    assert run(bytewise(data), framing="ndjson") == [b'{"a":1}', b'{"b":2}']


def test_leading_and_trailing_whitespace_kept_in_frames() -> None:
    assert run([b'  {"a":1} \t\n'], framing="ndjson") == [b'  {"a":1} \t']


@pytest.mark.parametrize(
    "sep",
    [
        "\u2028".encode(),
        "\u2029".encode(),
        "\x85".encode(),
        b"\x85",
        b"\x1c",
        b"\x1d",
        b"\x1e",
        b"\x0b",
        b"\x0c",
        b"\r",
    ],
)
def test_unicode_and_control_separators_are_not_line_breaks(sep: bytes) -> None:
    msg = b'{"text":"a' + sep + b'b"}'
    assert run([msg + b"\n" + msg + b"\n"], framing="ndjson") == [msg, msg]
    assert run(bytewise(msg + b"\n"), framing="ndjson") == [msg]


def test_final_line_without_newline_only_emitted_at_eof() -> None:
    dec = FrameDecoder(framing="ndjson")
    assert dec.feed(b'{"a":1}\n{"b":2}') == [b'{"a":1}']
    assert dec.feed(b"") == []
    assert dec.feed_eof() == [b'{"b":2}']
    assert dec.buffered == 0
    assert dec.feed_eof() == []


def test_final_line_with_cr_at_eof() -> None:
    assert run([b"abc\r"], framing="ndjson") == [b"abc"]
    assert run([b"   "], framing="ndjson") == []


def test_frames_are_bytes_even_for_bytearray_input() -> None:
    dec = FrameDecoder(framing="ndjson")
    frames = dec.feed(bytearray(b"a\nb\n")) + dec.feed(memoryview(b"c\n"))
    assert frames == [b"a", b"b", b"c"]
    assert all(type(f) is bytes for f in frames)


@pytest.mark.parametrize(
    "chunk",
    [b'{"a":1}\r\n', b"   \n", b"\n", b"", b'{"a":1}\n{"b":2}\n', b'{"a":1}', b"x" * 11 + b"\n"],
    ids=["crlf", "blank", "empty-line", "empty", "two-lines", "no-newline", "oversized"],
)
def test_whole_line_declines_anything_but_one_line_within_the_limit(chunk: bytes) -> None:
    dec = FrameDecoder(10, "ndjson")
    # (whole_line takes a CR LF line and a blank line: a JSON decoder skips both as
    # whitespace, and feed makes the same of them.)
    assert dec.whole_line(chunk) == (chunk in (b'{"a":1}\r\n', b"   \n"))
    assert dec.buffered == 0  # nothing consumed: feed sees the chunk as if fresh
    assert dec.feed(chunk) + dec.feed_eof() == run([chunk], framing="ndjson", max_message_size=10)


def test_whole_line_only_when_nothing_is_buffered_before_it() -> None:
    dec = FrameDecoder(10, "ndjson")
    assert dec.whole_line(b'{"a":1}\n')
    assert dec.feed(b'{"b":') == []
    assert not dec.whole_line(b"2}\n")  # it ends a pending line
    assert dec.feed(b"2}\n") == [b'{"b":2}']
    assert dec.feed(b"y" * 20) == []  # discarding an oversized line
    assert not dec.whole_line(b"1\n")
    assert dec.feed(b"1\n") == [Oversized(b"y" * 20 + b"1", 21)]
    assert dec.whole_line(b"2\n")
    # Not before the framing is known, never for content-length, only for bytes.
    assert not FrameDecoder(framing="auto").whole_line(b'{"a":1}\n')
    assert not FrameDecoder(framing="content-length").whole_line(b'{"a":1}\n')
    assert not FrameDecoder(framing="ndjson").whole_line(bytearray(b'{"a":1}\n'))  # type: ignore[arg-type]


@given(st.lists(st.sampled_from([b"a", b"\n", b"\r", b" ", b"\t"]), max_size=14).map(b"".join))
def test_whole_line_is_a_chunk_that_feed_makes_one_message_at_most_of(chunk: bytes) -> None:
    dec = FrameDecoder(10, "ndjson")
    whole = dec.whole_line(chunk)
    assert dec.buffered == 0
    frames = dec.feed(chunk)
    if whole:  # one message at most: the line, without its CR
        line = chunk[:-2] if chunk.endswith(b"\r\n") else chunk[:-1]
        assert frames in ([], [line]) and dec.buffered == 0
        assert frames == [] or not line.isspace()
    one_line = chunk.endswith(b"\n") and chunk.count(b"\n") == 1 and 1 < len(chunk) <= 11
    assert whole == one_line  # (a fresh decoder: nothing buffered before it)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(framing="lsp")
    with pytest.raises(ValueError):
        FrameDecoder(max_message_size=0)
    dec = FrameDecoder()
    assert dec.framing == "auto"
    assert dec.max_message_size == DEFAULT_MAX_MESSAGE_SIZE == 64 * MiB


# -- property tests -----------------------------------------------------------------

# Messages: arbitrary bytes and arbitrary (multi-byte) UTF-8 text, without b"\n".
message = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from(["\u2028", "\u2029", "\x1c", "\r", "\x85", "é", "日本", "🎉", "  ", "\t"]).map(
        str.encode
    ),
).map(lambda b: b.replace(b"\n", b""))


def expected_ndjson(messages: list[bytes]) -> list[bytes]:
    out = []
    for m in messages:
        body = m[:-1] if m.endswith(b"\r") else m
        if not is_blank(body):
            out.append(body)
    return out


@settings(max_examples=150, deadline=None)
@given(
    messages=st.lists(message, max_size=8),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    long_line=st.sampled_from([_ndjson.LONG_LINE, 0, 3]),  # the split or the find path
)
def test_ndjson_chunking_does_not_matter(
    messages: list[bytes], crlf: bool, final_newline: bool, cuts: list[int], long_line: int
) -> None:
    with mock.patch.object(_ndjson, "LONG_LINE", long_line):
        check_ndjson_chunking(messages, crlf, final_newline, cuts)


def check_ndjson_chunking(
    messages: list[bytes], crlf: bool, final_newline: bool, cuts: list[int]
) -> None:
    eol = b"\r\n" if crlf else b"\n"
    stream = eol.join(messages) + (eol if final_newline and messages else b"")
    expected = expected_ndjson([m + (b"\r" if crlf else b"") for m in messages])
    if crlf and not final_newline and messages:
        # the last message has no "\r\n" after it
        expected = expected_ndjson([m + b"\r" for m in messages[:-1]] + [messages[-1]])
    for framing in ("ndjson", "auto"):
        if framing == "auto" and looks_like_headers(stream):
            continue
        whole = run([stream], framing=framing)
        assert whole == expected
        assert run(bytewise(stream), framing=framing) == expected
        assert run(split_at(stream, cuts), framing=framing) == expected
        for k in range(len(stream) + 1):
            assert run([stream[:k], stream[k:]], framing=framing) == expected


header_name = st.sampled_from([b"Content-Type", b"X-Whatever", b"content-TYPE", b"Accept"])


@st.composite
def cl_message(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(wire bytes, body) of one content-length message with random extra headers."""
    body = draw(
        st.one_of(
            st.binary(max_size=40),
            st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
        )
    )
    eol = draw(st.sampled_from([b"\r\n", b"\n"]))
    name = draw(st.sampled_from([b"Content-Length", b"content-length", b"CONTENT-LENGTH"]))
    headers = [name + b": " + str(len(body)).encode()]
    for _ in range(draw(st.integers(0, 2))):
        headers.insert(
            draw(st.integers(0, len(headers))),
            draw(header_name) + b": " + draw(st.sampled_from([b"x", b"a; b=c", b""])),
        )
    return b"".join(h + eol for h in headers) + eol + body, body


@settings(max_examples=150, deadline=None)
@given(
    messages=st.lists(cl_message(), max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=12),
)
def test_content_length_chunking_does_not_matter(
    messages: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(wire for wire, _ in messages)
    expected = [body for _, body in messages]
    framings = ["content-length"]
    if not messages or looks_like_headers(stream):
        framings.append("auto")
    for framing in framings:
        assert run([stream], framing=framing) == expected
        assert run(bytewise(stream), framing=framing) == expected
        assert run(split_at(stream, cuts), framing=framing) == expected
        for k in range(len(stream) + 1):
            assert run([stream[:k], stream[k:]], framing=framing) == expected


# Arbitrary garbage streams made of the bytes that matter to the parsers.
fuzz_stream = st.lists(
    st.sampled_from(
        [
            b"\n",
            b"\r",
            b" ",
            b"\t",
            b"x",
            b"{}",
            b"Content-Length: ",
            b"content-type:",
            b"1",
            b"3",
            b"0",
            b":",
            b"\r\n",
            b"\r\n\r\n",
            b"Content-Length: 2\r\n\r\n",
        ]
    ),
    max_size=40,
).map(b"".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=fuzz_stream,
    framing=st.sampled_from(["ndjson", "content-length", "auto"]),
    max_size=st.integers(min_value=1, max_value=12),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
)
def test_any_stream_chunking_does_not_matter(
    stream: bytes, framing: str, max_size: int, cuts: list[int]
) -> None:
    """Whatever the input (errors, oversized messages...), chunking never changes events."""
    whole = run([stream], framing=framing, max_message_size=max_size)
    assert run(bytewise(stream), framing=framing, max_message_size=max_size) == whole
    assert run(split_at(stream, cuts), framing=framing, max_message_size=max_size) == whole
    for event in whole:
        if isinstance(event, Oversized):
            assert event.size > max_size
            # == for NDJSON; a content-length body cut short by EOF may have less
            assert len(event.prefix) <= min(PREFIX_SIZE, event.size)
            if framing == "ndjson":
                assert len(event.prefix) == min(PREFIX_SIZE, event.size)
        elif isinstance(event, bytes):
            assert len(event) <= max_size


# -- oversized messages -------------------------------------------------------------


def test_oversized_line_between_small_lines() -> None:
    chunk = 64 * KiB
    big = b'{"id":7,"x":"' + b"y" * 10_000_000 + b'"}'
    stream = b'{"a":1}\n' + big + b'\n{"b":2}\n'
    dec = FrameDecoder(max_message_size=1000, framing="ndjson")
    events: list[FrameEvent] = []
    for i in range(0, len(stream), chunk):
        events += dec.feed(stream[i : i + chunk])
        assert dec.buffered <= 1000 + chunk
    events += dec.feed_eof()
    assert events == [b'{"a":1}', Oversized(big[:4096], len(big)), b'{"b":2}']
    over = events[1]
    assert isinstance(over, Oversized)
    assert len(over.prefix) == 4096
    assert over.prefix.startswith(b'{"id":7,')
    assert dec.buffered == 0


def test_oversized_prefix_shorter_than_4096() -> None:
    line = b"z" * 2000
    assert run([b"a\n" + line + b"\nb\n"], max_message_size=1000, framing="ndjson") == [
        b"a",
        Oversized(line, 2000),
        b"b",
    ]
    assert run(bytewise(line + b"\n"), max_message_size=1000, framing="ndjson") == [
        Oversized(line, 2000)
    ]


def test_limit_is_on_the_message_not_the_line_ending() -> None:
    # exactly max bytes: fine with \n or \r\n
    assert run([b"12345\n12345\r\n"], max_message_size=5, framing="ndjson") == [
        b"12345",
        b"12345",
    ]
    assert run(bytewise(b"12345\r\n"), max_message_size=5, framing="ndjson") == [b"12345"]
    # one more byte: oversized; size counts the bytes of the line before "\n"
    assert run([b"123456\n"], max_message_size=5, framing="ndjson") == [Oversized(b"123456", 6)]
    assert run(bytewise(b"123456\r\nok\n"), max_message_size=5, framing="ndjson") == [
        Oversized(b"123456\r", 7),
        b"ok",
    ]


def test_oversized_at_eof_and_recovery() -> None:
    dec = FrameDecoder(max_message_size=10, framing="ndjson")
    assert dec.feed(b"x" * 50) == []
    assert dec.buffered <= 50
    assert dec.feed(b"x" * 50) == []
    assert dec.feed_eof() == [Oversized(b"x" * 100, 100)]
    assert dec.feed(b"ok\n") == [b"ok"]


def test_oversized_whitespace_only_line_is_just_blank() -> None:
    assert run([b"a\n" + b" " * 5000 + b"\nb\n"], max_message_size=10, framing="ndjson") == [
        b"a",
        b"b",
    ]
    chunks = [b"a\n", *[b" \t" * 100] * 50, b"\r\nb\n"]
    assert run(chunks, max_message_size=10, framing="ndjson") == [b"a", b"b"]


def test_100_mib_line_with_default_limit() -> None:
    started = time.perf_counter()
    dec = FrameDecoder(framing="auto")
    assert dec.feed(b'{"id":1}\n') == [b'{"id":1}']
    peak = 0
    for i in range(100):
        chunk = (b'{"id":2,"big":"' if i == 0 else b"") + b"q" * MiB  # a fresh 1 MiB object
        assert dec.feed(chunk) == []
        peak = max(peak, dec.buffered)
    events = dec.feed(b'"}\n{"id":3}\n')
    assert [type(e) for e in events] == [Oversized, bytes]
    over = events[0]
    assert isinstance(over, Oversized)
    assert over.size == 100 * MiB + len(b'{"id":2,"big":"') + 2
    assert over.prefix == b'{"id":2,"big":"' + b"q" * (4096 - 15)
    assert events[1] == b'{"id":3}'
    assert peak <= 65 * MiB
    assert dec.buffered == 0
    assert time.perf_counter() - started < 5


# -- auto-detection -----------------------------------------------------------------


def test_auto_detects_content_length_byte_by_byte() -> None:
    stream = b'Content-Length: 8\r\n\r\n{"a":1}\nContent-Length: 2\r\n\r\n{}'
    dec = FrameDecoder()
    events: list[FrameEvent] = []
    for i, b in enumerate(bytewise(stream)):
        events += dec.feed(b)
        assert dec.framing == ("auto" if i < 14 else "content-length")
        assert dec.buffered <= 15 or i >= 15
    events += dec.feed_eof()
    assert events == [b'{"a":1}\n', b"{}"]


@pytest.mark.parametrize(
    "first",
    [b'{"jsonrpc":"2.0"}', b"[1,2]", b"Content-Lengthy", b"content", b"C"],
)
def test_auto_detects_ndjson_byte_by_byte(first: bytes) -> None:
    stream = b"\r\n  \n" + first + b"\n{}\n"
    dec = FrameDecoder()
    events: list[FrameEvent] = []
    for b in bytewise(stream):
        events += dec.feed(b)
    assert dec.framing == "ndjson"
    assert events + dec.feed_eof() == [first, b"{}"]


def test_auto_detection_needs_at_most_15_bytes() -> None:
    dec = FrameDecoder()
    assert dec.feed(b"CONTENT-LENGTH:") == []
    assert dec.framing == "content-length"
    dec = FrameDecoder()
    assert dec.feed(b"Content-Length") == []
    assert dec.framing == "auto"
    assert dec.feed(b";") == []
    assert dec.framing == "ndjson"
    assert dec.feed_eof() == [b"Content-Length;"]


def test_auto_content_type_first_header() -> None:
    stream = b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    assert run([stream]) == [b"{}"]
    assert run(bytewise(stream)) == [b"{}"]


def test_auto_leading_whitespace() -> None:
    assert run([b"\r\n\n  Content-Length: 2\r\n\r\n{}"]) == [b"{}"]
    assert run(bytewise(b"\n \t{}\n")) == [b" \t{}"]
    dec = FrameDecoder()
    assert dec.feed(b"\n\n  \r\n" * 1000) == []
    assert dec.framing == "auto"
    assert dec.buffered < 16
    assert dec.feed_eof() == []


def test_auto_undecided_at_eof_is_ndjson() -> None:
    dec = FrameDecoder()
    assert dec.feed(b"Conte") == []
    assert dec.feed_eof() == [b"Conte"]
    assert dec.framing == "ndjson"


# -- content-length -----------------------------------------------------------------


def test_content_length_basic() -> None:
    body = '{"text":"héllo 🎉 \u2028 line\nbreak"}'.encode()
    stream = encode_frame(body, "content-length") * 3
    assert run([stream], framing="content-length") == [body] * 3
    assert run(bytewise(stream), framing="content-length") == [body] * 3


def test_content_length_extra_headers_and_case() -> None:
    stream = (
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        b"content-length: 2\r\n"
        b"X-Other: 1\r\n"
        b"\r\n"
        b"{}"
        b"CONTENT-LENGTH:3\r\n\r\n[1]"
    )
    assert run([stream], framing="content-length") == [b"{}", b"[1]"]


def test_content_length_bare_newlines() -> None:
    stream = b"Content-Length: 2\n\n{}Content-Length: 3\nContent-Type: x\n\n[2]"
    assert run([stream], framing="content-length") == [b"{}", b"[2]"]
    assert run(bytewise(stream)) == [b"{}", b"[2]"]


def test_content_length_blank_lines_between_messages() -> None:
    stream = b"Content-Length: 2\r\n\r\n{}\r\n\r\nContent-Length: 2\r\n\r\n[]\r\n"
    assert run([stream], framing="content-length") == [b"{}", b"[]"]


def test_content_length_zero_body() -> None:
    assert run([b"Content-Length: 0\r\n\r\nContent-Length: 2\r\n\r\n{}"]) == [b"", b"{}"]


def test_malformed_header_then_recovery() -> None:
    stream = b"this is not a header\r\nContent-Length: 999\r\n\r\nContent-Length: 2\r\n\r\n{}"
    events = run([stream], framing="content-length")
    assert len(events) == 2
    assert isinstance(events[0], FramingError)
    assert "malformed header line" in events[0].detail
    assert events[1] == b"{}"
    assert run(bytewise(stream), framing="content-length") == events


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        (b"Content-Type: x\r\n", "without a Content-Length"),
        (b"Content-Length: abc\r\n", "invalid Content-Length"),
        (b"Content-Length: -1\r\n", "invalid Content-Length"),
        (b"Content-Length: " + b"9" * 5000 + b"\r\n", "invalid Content-Length"),
        (b"Content-Length: 2\r\nContent-Length: 3\r\n", "conflicting"),
    ],
)
def test_bad_header_blocks(headers: bytes, detail: str) -> None:
    stream = headers + b"\r\nContent-Length: 2\r\n\r\n{}"
    events = run([stream], framing="content-length")
    assert len(events) == 2
    assert isinstance(events[0], FramingError)
    assert detail in events[0].detail
    assert events[1] == b"{}"


def test_duplicate_equal_content_length_is_fine() -> None:
    stream = b"Content-Length: 2\r\ncontent-length: 02\r\n\r\n{}"
    assert run([stream], framing="content-length") == [b"{}"]


def test_header_block_too_large() -> None:
    dec = FrameDecoder(framing="content-length")
    events = dec.feed(b"X-Junk: ")
    for _ in range(200):
        events += dec.feed(b"j" * 1024)
        assert dec.buffered <= MAX_HEADER_SIZE
    events += dec.feed(b"\r\n\r\nContent-Length: 2\r\n\r\n{}")
    assert len(events) == 2
    assert isinstance(events[0], FramingError)
    assert "larger than" in events[0].detail
    assert events[1] == b"{}"


def test_content_length_oversized_body_is_skipped() -> None:
    body = b'{"id":5,"x":"' + b"a" * 100_000 + b'"}'
    stream = (
        b"Content-Length: 2\r\n\r\n{}"
        + encode_frame(body, "content-length")
        + b"Content-Length: 2\r\n\r\n[]"
    )
    dec = FrameDecoder(max_message_size=1000)
    events: list[FrameEvent] = []
    for i in range(0, len(stream), 4096):
        events += dec.feed(stream[i : i + 4096])
        assert dec.buffered <= PREFIX_SIZE + 1000
    events += dec.feed_eof()
    assert events == [b"{}", Oversized(body[:4096], len(body)), b"[]"]


def test_content_length_eof_cases() -> None:
    [err] = run([b"Content-Length: 10\r\n\r\n{}"], framing="content-length")
    assert isinstance(err, FramingError)
    assert "8 of 10" in err.detail
    [err] = run([b"Content-Length: 10\r\n"], framing="content-length")
    assert isinstance(err, FramingError)
    [err] = run([b"Content-Len"], framing="content-length")
    assert isinstance(err, FramingError)
    assert run([b"Content-Length: 2\r\n\r\n{}\r\n  "], framing="content-length") == [b"{}"]
    # truncated oversized body: still reported as oversized (declared size)
    assert run([b"Content-Length: 100\r\n\r\n" + b"x" * 20], max_message_size=10) == [
        Oversized(b"x" * 20, 100)
    ]


# -- encode_frame -------------------------------------------------------------------


@given(st.lists(message.filter(lambda m: not is_blank(m.removesuffix(b"\r")))))
def test_encode_ndjson_round_trip(bodies: list[bytes]) -> None:
    bodies = [b for b in bodies if not b.endswith(b"\r")]
    stream = b"".join(encode_frame(b) for b in bodies)
    assert run([stream], framing="ndjson") == bodies
    if not looks_like_headers(stream):
        assert run([stream]) == bodies


@given(st.lists(st.binary(max_size=100)))
def test_encode_content_length_round_trip(bodies: list[bytes]) -> None:
    stream = b"".join(encode_frame(b, "content-length") for b in bodies)
    assert run([stream], framing="content-length") == bodies
    assert run([stream]) == bodies


def test_encode_frame_format_and_errors() -> None:
    assert encode_frame(b'{"a":1}') == b'{"a":1}\n'
    assert encode_frame(b"{}", "content-length") == b"Content-Length: 2\r\n\r\n{}"
    assert encode_frame(b"a\nb", "content-length") == b"Content-Length: 3\r\n\r\na\nb"
    with pytest.raises(ValueError):
        encode_frame(b'{"a":\n1}')
    with pytest.raises(ValueError):
        encode_frame(b"{}", "auto")


def test_event_reprs() -> None:
    assert repr(FramingError("bad")) == "FramingError(detail='bad')"
    assert repr(Oversized(b"ab", 10)) == "Oversized(prefix=b'ab', size=10)"
    assert "..." in repr(Oversized(b"a" * 100, 1000))
    assert Oversized(b"a", 2) == Oversized(b"a", 2) != Oversized(b"a", 3)


TRICKY_LINES = [
    b'{"a":1}',
    b'{"a":1}\r',
    b"abc\r\r",
    b"   ",
    b"\t\x0b",
    b"",
    b"x" * 64,
    b"x" * 65,
    b'{"b":2} ',
]


@pytest.mark.parametrize("max_size", [64, 1024])
def test_one_whole_line_per_chunk_frames_like_any_other_chunking(max_size: int) -> None:
    # A chunk holding exactly one whole line takes a shortcut; it must agree with the general path.
    chunks = [line + b"\n" for line in TRICKY_LINES]
    line_by_line = run(chunks, framing="ndjson", max_message_size=max_size)
    assert line_by_line == run([b"".join(chunks)], framing="ndjson", max_message_size=max_size)
    assert line_by_line == run(
        bytewise(b"".join(chunks)), framing="ndjson", max_message_size=max_size
    )
    assert b'{"a":1}' in line_by_line and b"abc\r" in line_by_line
