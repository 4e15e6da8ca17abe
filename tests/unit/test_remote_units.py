"""Sans-network pieces of remote ACP: the SSE decoder, the routing envelope, the security
checks, the cookie jar adapter."""

from __future__ import annotations

from http.cookiejar import CookieJar

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acpstack.server import ServerSecurity, is_loopback
from acpstack.server._http import sse_events
from acpstack.transports._cookies import cookie_header, store_cookies
from acpstack.transports._envelope import peek_envelope, single_line
from acpstack.transports._sse import SseDecoder, SseError, encode_event

MESSAGES = [
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}}',
    b'{"id":1,"result":{}}',
    b"{}",
]


@given(st.lists(st.sampled_from(MESSAGES), max_size=8), st.data())
def test_sse_events_survive_any_split(messages: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(encode_event(m) for m in messages)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    decoder = SseDecoder(1024)
    out: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out += decoder.feed(stream[start:end])
    assert out == messages


@given(st.sampled_from([b"\n", b"\r\n", b"\r"]), st.integers(1, 20))
def test_sse_line_endings_comments_fields_and_multiline_data(eol: bytes, cut: int) -> None:
    raw = (
        b"\xef\xbb\xbf: keep-alive"
        + eol
        + eol
        + b"event: message"
        + eol
        + b"id: 7"
        + eol
        + b'data: {"a":'
        + eol
        + b"data:1}"
        + eol
        + eol
        + b"retry: 5"
        + eol
        + eol
        + b"data"
        + eol
        + eol
    )
    decoder = SseDecoder(1024)
    out = decoder.feed(raw[:cut]) + decoder.feed(raw[cut:])
    assert out == [b'{"a":\n1}', b""]


# Messages whose text looks like SSE fields, and one with an escape, among plain ones.
TRICKY = [
    *MESSAGES,
    b'{"jsonrpc":"2.0","method":"x","params":{"text":"id: 5 data: y"}}',
    b'{"jsonrpc":"2.0","id":"data: 1","result":{"t":"\\u00e9"}}',
]


def feed_both_ways(decoder: SseDecoder, piece: bytes) -> tuple[list[bytes], bool]:
    """What the HTTP client does with a read: the fast path, else `feed`; and which ran."""
    lines = decoder.feed_lines(piece)
    if lines is None:
        return decoder.feed(piece), False
    return (lines[:-1].split(b"\n") if lines else []), True


@given(
    st.lists(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=5), max_size=6),
    st.lists(st.sampled_from([b"", b":\n\n", b"retry: 5\n\n"]), min_size=6, max_size=6),
    st.data(),
)
def test_sse_fast_lines_equal_the_decoder_on_any_split(
    batches: list[list[bytes]], between: list[bytes], data: st.DataObject
) -> None:
    # Batches as acpstack's server writes them (an id on the first event only), with
    # keep-alive comments or other fields between some of them, cut anywhere.
    stream, first = b"", 1
    for batch, extra in zip(batches, between, strict=False):
        stream += sse_events(first, batch) + extra
        first += len(batch)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    fast, plain = SseDecoder(1024), SseDecoder(1024)
    got: list[bytes] = []
    want: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        got += feed_both_ways(fast, stream[start:end])[0]
        want += plain.feed(stream[start:end])
        assert (fast.last_id, fast.after_id, fast.position()) == (
            plain.last_id,
            plain.after_id,
            plain.position(),
        )
    assert got == want == [m for batch in batches for m in batch]


def test_sse_fast_lines_take_a_busy_streams_reads_and_leave_the_rest() -> None:
    decoder = SseDecoder(1024)
    decoder.feed(b": hello\n\n")  # the first read goes the whole way (a BOM may start it)
    one = sse_events(1, [b"{}", b"[1]"]) + sse_events(3, [b"{}"])
    assert decoder.feed_lines(one + b"data: {") == b"{}\n[1]\n{}\n"
    assert (decoder.last_id, decoder.position()) == ("3", "3")
    assert decoder.feed_lines(b'"a":1}\n\ndata: 2\n\n') == b'{"a":1}\n2\n'
    assert decoder.position() == "5"
    assert decoder.feed_lines(b"data: 3") is None  # no event ends here: `feed` keeps it
    assert decoder.feed(b"data: 3") == []
    # Anything else is left to `feed`, untouched: a second line, another field, CR.
    for odd in (b"\n\ndata: 4\ndata: 5\n\n", b"\n\nevent: x\ndata: 4\n\n", b"\r\n\r\n"):
        assert decoder.feed_lines(odd) is None
    assert decoder.feed(b"\n\n") == [b"3"]
    assert decoder.position() == "6"
    with pytest.raises(SseError):  # the size limit holds on this path too
        decoder.feed_lines(b"data: 1\n\ndata: " + b"x" * 2000)


def test_sse_event_over_the_limit_is_an_error() -> None:
    decoder = SseDecoder(10)
    with pytest.raises(SseError):
        decoder.feed(b"data: " + b"x" * 20)


def test_envelope_kinds_sessions_and_odd_input() -> None:
    assert (
        peek_envelope(
            b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s"}}'
        ).kind
        == "request"
    )
    note = peek_envelope(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}'
    )
    assert (note.kind, note.session_id, note.id) == ("notification", "s", None)
    answer = peek_envelope(b'{"jsonrpc":"2.0","id":"x","result":{"sessionId":"new"}}')
    assert (answer.kind, answer.id, answer.result_session_id) == ("response", "x", "new")
    assert (
        peek_envelope(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}').kind
        == "response"
    )
    assert peek_envelope(b'{"jsonrpc":"2.0","id":1,"result":null}').kind == "response"
    # a prompt's outcome comes with the peek (the server's metrics count it from there)
    ended = peek_envelope(b'{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}')
    assert (ended.stop_reason, ended.error) == ("cancelled", None)
    failed = peek_envelope(b'{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"x"}}')
    assert (failed.stop_reason, failed.error) == (None, {"code": -32603, "message": "x"})
    assert peek_envelope(b'{"id":4,"result":{"stopReason":7}}').stop_reason is None
    assert peek_envelope(b'{"id":4,"result":{"_meta":{"stopReason":"x"}}}').stop_reason is None
    loose = peek_envelope(b'{"id":[1],"result":{"stopReason":"end_turn"}}')  # the slow path
    assert loose.kind == "invalid"
    loose = peek_envelope(b'{"id":4,"result":{"stopReason":"end_turn"},"error":[1]}')
    assert (loose.stop_reason, loose.error) == ("end_turn", [1])
    assert peek_envelope(b'{"jsonrpc":"2.0","method":"x","params":[1,2]}').kind == "notification"
    assert (
        peek_envelope(b'{"jsonrpc":"2.0","method":"x","params":{"sessionId":5}}').session_id is None
    )
    for odd in (
        b"[]",
        b"3",
        b'{"id":1.5,"method":"x"}',
        b'{"id":true,"method":"x"}',
        b'{"method":5}',
        b'{"id":1}',
    ):
        assert peek_envelope(odd).kind == "invalid", odd
    with pytest.raises(msgspec.DecodeError):
        peek_envelope(b"{not json")
    assert single_line(b'{\n  "a": 1\n}\n') == b'{   "a": 1 }'  # breaks become spaces
    assert single_line(b' {"a":1} ') == b'{"a":1}'


def test_host_origin_and_token_checks() -> None:
    open_server = ServerSecurity()
    assert (
        open_server.check_host("127.0.0.1:8765") is None
        and open_server.check_host("localhost") is None
    )
    assert open_server.check_host("[::1]:80") is None
    rejected = open_server.check_host("evil.example:8765")
    assert rejected is not None and rejected.status == 421
    assert (
        open_server.check_host(None) is not None
        and open_server.check_host("127.0.0.1, evil.example") is not None
    )
    assert ServerSecurity(allowed_hosts=["agent.lan"]).check_host("agent.lan:9000") is None
    assert ServerSecurity(allowed_hosts=["*"]).check_host("anything") is None
    assert (
        open_server.check_origin(None) is None
        and open_server.check_origin("http://localhost:3000") is None
    )
    denied = open_server.check_origin("https://evil.example")
    assert denied is not None and denied.status == 403
    assert open_server.check_origin("null") is not None
    assert (
        ServerSecurity(allowed_origins=["https://ed.example"]).check_origin("https://ed.example")
        is None
    )
    secured = ServerSecurity(token="t0k")
    assert secured.check_token({}, b"") is not None
    assert secured.check_token({"authorization": "Bearer t0k"}, b"") is None
    assert secured.check_token({"authorization": "bearer t0k"}, b"") is None
    assert secured.check_token({"x-secret-key": "t0k"}, b"") is None
    assert secured.check_token({}, b"a=1&token=t0k") is None
    assert secured.check_token({"authorization": "Bearer t0"}, b"token=t0kk") is not None
    assert "t0k" not in repr(secured)
    assert (
        is_loopback("127.0.0.2")
        and is_loopback("::1")
        and is_loopback("localhost")
        and not is_loopback("0.0.0.0")
    )


def test_cookie_jar_round_trip_for_websocket_handshakes() -> None:
    jar = CookieJar()
    store_cookies(jar, "ws://127.0.0.1:9/acp", ["affinity=a1; Path=/", "other=2; Path=/acp"])
    header = cookie_header(jar, "ws://127.0.0.1:9/acp")
    assert header is not None and "affinity=a1" in header and "other=2" in header
    assert cookie_header(jar, "ws://elsewhere.example/acp") is None
