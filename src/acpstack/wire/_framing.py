"""Sans-IO message framing for the ACP wire.

`FrameDecoder` is fed raw bytes and returns events; it does no I/O and knows nothing
about asyncio or JSON. Two framings are supported:

* ``"ndjson"`` (the official ACP framing): one message per line. Lines are split on the
  byte ``b"\\n"`` only (U+2028, ``\\x1c``, a lone ``\\r`` ... are ordinary bytes). One
  trailing ``b"\\r"`` is removed from each line; lines that are empty or only ASCII
  whitespace are skipped. Frames are the raw line bytes.
* ``"content-length"`` (LSP style, opt-in): ``Content-Length: N`` plus optional other
  headers (ignored), each ending in ``\\r\\n`` or ``\\n``, a blank line, then exactly N
  bytes of body. The frame is the body, exactly as sent.

``"auto"`` looks at the first non-whitespace bytes of the stream: ``Content-Length:`` or
``Content-Type:`` (any case) selects content-length framing, anything else NDJSON.

Events returned by `FrameDecoder.feed` / `FrameDecoder.feed_eof`, in stream order:

* ``bytes``: one complete message.
* `Oversized`: a message longer than ``max_message_size``. Its bytes were skipped
  without being buffered; ``prefix`` keeps the first 4096 so the caller can try to
  recover the request id.
* `FramingError`: a malformed content-length header block. The decoder has already
  resynchronised (it skips input up to the next blank line).

Memory: the decoder never holds more than ``max_message_size + 1`` bytes of one message
(plus a 4096-byte prefix and at most ``MAX_HEADER_SIZE`` of headers) between calls,
whatever the size of the lines it is fed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from itertools import islice
from typing import Final, TypeAlias

from msgspec import Struct

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MAX_HEADER_SIZE",
    "PREFIX_SIZE",
    "FrameDecoder",
    "FrameEvent",
    "FramingError",
    "Oversized",
    "encode_frame",
]

_log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_SIZE: Final = 64 * 1024 * 1024
#: How many leading bytes of an oversized message `Oversized.prefix` keeps.
PREFIX_SIZE: Final = 4096
#: Largest accepted content-length header block (all header lines, line endings included).
MAX_HEADER_SIZE: Final = 64 * 1024

_FRAMINGS: Final = ("ndjson", "content-length", "auto")
# Stream openings that select content-length framing in "auto" mode (lower case).
_CL_SIGNATURES: Final = (b"content-length:", b"content-type:")
_DETECT_LEN: Final = max(len(s) for s in _CL_SIGNATURES)  # 15
# In "auto" mode a run of leading whitespace is buffered until the first real byte
# arrives; a whitespace-only line longer than this settles the question (NDJSON).
_AUTO_WS_LIMIT: Final = 4096
_NON_WS: Final = re.compile(rb"[^ \t\n\r\x0b\x0c]")
# The usual header block, handled without the general header parser.
_SIMPLE_HEADER: Final = re.compile(rb"content-length: ?([0-9]{1,19})\r?\n\r?\n", re.IGNORECASE)
_MAX_LENGTH_DIGITS: Final = 19

# Content-length parser states.
_HEADERS: Final = 0
_BODY: Final = 1
_SKIP_BODY: Final = 2
_SKIP_HEADERS: Final = 3


class Oversized(Struct, frozen=True):
    """A message larger than the decoder's limit; its body was discarded.

    ``size`` is the number of bytes of the message (NDJSON: the line without its
    ``\\n``; content-length: the declared length). ``prefix`` is its first
    ``min(size, 4096)`` bytes.
    """

    prefix: bytes
    size: int

    def __repr__(self) -> str:
        shown = self.prefix[:64]
        more = "..." if len(self.prefix) > len(shown) else ""
        return f"Oversized(prefix={shown!r}{more}, size={self.size})"


class FramingError(Struct, frozen=True):
    """A malformed content-length header block; the decoder resynchronised after it."""

    detail: str


FrameEvent: TypeAlias = bytes | Oversized | FramingError


class FrameDecoder:
    """Incremental, sans-IO splitter of a byte stream into messages."""

    __slots__ = (
        "_max",
        "_framing",
        "_feed_impl",
        "_auto_buf",
        # NDJSON
        "_pending",
        "_pending_len",
        "_discarding",
        "_disc_size",
        "_disc_nonblank",
        "_prefix",
        # content-length
        "_state",
        "_hbuf",
        "_hsize",
        "_hseen",
        "_clen",
        "_msg_size",
        "_remaining",
        "_body",
        "_body_len",
        "_skip_nonblank",
    )

    def __init__(
        self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, framing: str = "auto"
    ) -> None:
        if framing not in _FRAMINGS:
            raise ValueError(f"unknown framing {framing!r}; expected one of {_FRAMINGS}")
        if max_message_size < 1:
            raise ValueError("max_message_size must be at least 1")
        self._max = max_message_size
        self._framing = framing
        self._auto_buf = b""
        self._prefix = b""
        self._reset_ndjson()
        self._reset_cl()
        self._feed_impl: Callable[[bytes], list[FrameEvent]] = self._impl_for(framing)

    # -- public API ---------------------------------------------------------------

    @property
    def framing(self) -> str:
        """``"ndjson"`` or ``"content-length"`` once known, ``"auto"`` before that."""
        return self._framing

    @property
    def max_message_size(self) -> int:
        return self._max

    @property
    def buffered(self) -> int:
        """Number of stream bytes currently held by the decoder (all buffers)."""
        return (
            len(self._auto_buf)
            + self._pending_len
            + len(self._prefix)
            + len(self._hbuf)
            + self._body_len
        )

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the events it completes, in stream order."""
        if type(data) is not bytes:
            data = bytes(data)
        line = self.feed_line(data)
        if line is not None:
            return [line]
        if not data:
            return []
        return self._feed_impl(data)

    def feed_line(self, data: bytes) -> bytes | None:
        """The common chunk, fast: if ``data`` is exactly one whole, ordinary NDJSON line
        and nothing is buffered before it, consume it and return the message. Otherwise
        consume nothing and return None (then call `feed`)."""
        if type(data) is not bytes or not data or data[-1] != 10 or self._framing != "ndjson":
            return None
        if self._pending or self._discarding:
            return None
        line = data[:-1]
        if (
            0 < len(line) <= self._max
            and b"\n" not in line
            and line[-1] != 13
            and not line.isspace()
        ):
            return line
        return None

    def feed_eof(self) -> list[FrameEvent]:
        """Signal end of stream; flush a final line that has no trailing newline.

        The decoder is left empty (its framing is kept) and may be fed again.
        """
        out: list[FrameEvent] = []
        if self._framing == "auto":
            buf, self._auto_buf = self._auto_buf, b""
            if _NON_WS.search(buf) is None:
                return out
            # Stream too short to be a content-length header block: one final line.
            self._set_framing("ndjson")
            out = self._feed_ndjson(buf)
        if self._framing == "ndjson":
            self._eof_ndjson(out)
        else:
            self._eof_cl(out)
        return out

    # -- framing selection --------------------------------------------------------

    def _impl_for(self, framing: str) -> Callable[[bytes], list[FrameEvent]]:
        if framing == "ndjson":
            return self._feed_ndjson
        if framing == "content-length":
            return self._feed_cl
        return self._feed_auto

    def _set_framing(self, framing: str) -> None:
        self._framing = framing
        self._feed_impl = self._impl_for(framing)
        _log.debug("wire framing detected: %s", framing)

    def _feed_auto(self, data: bytes) -> list[FrameEvent]:
        buf = self._auto_buf + data if self._auto_buf else data
        m = _NON_WS.search(buf)
        ws_end = len(buf) if m is None else m.start()
        decided: str | None = None
        if ws_end > _AUTO_WS_LIMIT and any(
            len(seg) > _AUTO_WS_LIMIT for seg in buf[:ws_end].split(b"\n")
        ):
            decided = "ndjson"
        elif m is not None:
            head = buf[ws_end : ws_end + _DETECT_LEN].lower()
            if any(head.startswith(sig) for sig in _CL_SIGNATURES):
                decided = "content-length"
            elif not any(sig.startswith(head) for sig in _CL_SIGNATURES):
                decided = "ndjson"
        if decided is None:
            # Undecided: keep only the current line (whole leading whitespace lines
            # are blank in both framings).
            cut = buf.rfind(b"\n", 0, ws_end) + 1
            self._auto_buf = buf[cut:]
            return []
        self._auto_buf = b""
        self._set_framing(decided)
        return self._feed_impl(buf)

    # -- NDJSON ---------------------------------------------------------------------

    def _reset_ndjson(self) -> None:
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._discarding = False
        self._disc_size = 0
        self._disc_nonblank = False
        self._prefix = b""

    def _feed_ndjson(self, data: bytes) -> list[FrameEvent]:
        out: list[FrameEvent] = []
        if b"\n" not in data:
            if self._discarding:
                self._discard(data)
            else:
                self._append_pending(data)
            return out
        parts = data.split(b"\n")
        # parts[0] ends the current line, parts[-1] starts a new one.
        first = parts[0]
        if self._discarding:
            self._discard(first)
            self._finish_discard(out)
        elif self._pending:
            self._append_pending(first)
            if self._discarding:
                self._finish_discard(out)
            else:
                line = b"".join(self._pending)
                self._pending = []
                self._pending_len = 0
                self._line(line, out)
        elif 0 < len(first) <= self._max and first[-1] != 13 and not first.isspace():
            out.append(first)  # the common case: a chunk that starts with a whole line
        elif first:
            self._line(first, out)
        if len(parts) == 2:
            if parts[1]:
                self._append_pending(parts[1])
            return out
        mx = self._max
        append = out.append
        for line in islice(parts, 1, len(parts) - 1):
            # Fast path: a normal line. Anything unusual goes through _line.
            if 0 < len(line) <= mx and not line.isspace():
                append(line[:-1] if line[-1] == 13 else line)
            elif line:
                self._line(line, out)
        last = parts[-1]
        if last:
            self._append_pending(last)
        return out

    def _line(self, raw: bytes, out: list[FrameEvent]) -> None:
        """Handle one complete line ``raw`` (without its ``\\n``)."""
        line = raw[:-1] if raw[-1:] == b"\r" else raw
        if not line or line.isspace():
            return
        if len(line) > self._max:
            out.append(Oversized(raw[:PREFIX_SIZE], len(raw)))
        else:
            out.append(line)

    def _append_pending(self, piece: bytes) -> None:
        if not piece:
            return
        self._pending.append(piece)
        self._pending_len += len(piece)
        # +1: the line may still turn out to end in "\r\n", which is not counted.
        if self._pending_len > self._max + 1:
            self._start_discard()

    def _start_discard(self) -> None:
        prefix = b""
        nonblank = False
        for piece in self._pending:
            if len(prefix) < PREFIX_SIZE:
                prefix += piece[: PREFIX_SIZE - len(prefix)]
            if not nonblank and not piece.isspace():
                nonblank = True
            if nonblank and len(prefix) >= PREFIX_SIZE:
                break
        self._prefix = prefix
        self._disc_nonblank = nonblank
        self._disc_size = self._pending_len
        self._pending = []
        self._pending_len = 0
        self._discarding = True

    def _discard(self, seg: bytes) -> None:
        self._disc_size += len(seg)
        if len(self._prefix) < PREFIX_SIZE:
            self._prefix += seg[: PREFIX_SIZE - len(self._prefix)]
        if not self._disc_nonblank and seg and not seg.isspace():
            self._disc_nonblank = True

    def _finish_discard(self, out: list[FrameEvent]) -> None:
        # A whitespace-only line is blank whatever its length: skipped silently.
        if self._disc_nonblank:
            out.append(Oversized(self._prefix, self._disc_size))
        self._prefix = b""
        self._disc_size = 0
        self._disc_nonblank = False
        self._discarding = False

    def _eof_ndjson(self, out: list[FrameEvent]) -> None:
        if self._discarding:
            self._finish_discard(out)
        elif self._pending:
            line = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            self._line(line, out)

    # -- Content-Length -------------------------------------------------------------

    def _reset_cl(self) -> None:
        self._state = _HEADERS
        self._hbuf = b""  # incomplete header line
        self._hsize = 0  # bytes of complete header lines in the current block
        self._hseen = False  # a non-blank header line was seen in the current block
        self._clen: int | None = None
        self._msg_size = 0
        self._remaining = 0
        self._body: list[bytes] = []
        self._body_len = 0
        self._skip_nonblank = False

    def _feed_cl(self, data: bytes) -> list[FrameEvent]:
        out: list[FrameEvent] = []
        pos = 0
        n = len(data)
        while pos < n:
            state = self._state
            if state == _BODY:
                end = pos + self._remaining
                if end <= n:
                    piece = data[pos:end]
                    if self._body:
                        self._body.append(piece)
                        piece = b"".join(self._body)
                        self._body = []
                        self._body_len = 0
                    out.append(piece)
                    self._remaining = 0
                    self._state = _HEADERS
                    pos = end
                else:
                    piece = data[pos:]
                    self._body.append(piece)
                    self._body_len += len(piece)
                    self._remaining -= len(piece)
                    pos = n
            elif state == _HEADERS:
                if not self._hbuf and not self._hseen:
                    m = _SIMPLE_HEADER.match(data, pos)
                    if m is not None and m.end() - pos <= MAX_HEADER_SIZE:
                        pos = m.end()
                        self._start_body(int(m[1]), out)
                        continue
                i = data.find(b"\n", pos)
                if i < 0:
                    self._hbuf += data[pos:]
                    if self._hsize + len(self._hbuf) > MAX_HEADER_SIZE:
                        self._header_error(out, _too_large(), line_consumed=False)
                    break
                if self._hbuf:
                    line = self._hbuf + data[pos:i]
                    self._hbuf = b""
                else:
                    line = data[pos:i]
                pos = i + 1
                self._header_line(line, out)
            elif state == _SKIP_BODY:
                take = min(self._remaining, n - pos)
                room = PREFIX_SIZE - len(self._prefix)
                if room > 0:
                    self._prefix += data[pos : pos + min(take, room)]
                self._remaining -= take
                pos += take
                if not self._remaining:
                    out.append(Oversized(self._prefix, self._msg_size))
                    self._prefix = b""
                    self._state = _HEADERS
            else:  # _SKIP_HEADERS: resynchronise on the next blank line
                i = data.find(b"\n", pos)
                if i < 0:
                    if not self._skip_nonblank and not data[pos:].isspace():
                        self._skip_nonblank = True
                    break
                seg = data[pos:i]
                pos = i + 1
                if self._skip_nonblank or (seg and not seg.isspace()):
                    self._skip_nonblank = False
                else:
                    self._state = _HEADERS
        return out

    def _header_line(self, line: bytes, out: list[FrameEvent]) -> None:
        """Handle one complete header line (without its ``\\n``)."""
        if self._hsize + len(line) + 1 > MAX_HEADER_SIZE:
            self._header_error(out, _too_large(), line_consumed=True)
            return
        if not line or line.isspace():
            if not self._hseen:
                return  # blank lines between messages
            clen = self._clen
            self._hseen = False
            self._hsize = 0
            self._clen = None
            if clen is None:
                out.append(FramingError("header block without a Content-Length header"))
            else:
                self._start_body(clen, out)
            return
        self._hseen = True
        self._hsize += len(line) + 1
        name, sep, value = line.partition(b":")
        if not sep:
            self._header_error(out, f"malformed header line {_shorten(line)}")
            return
        if name.strip().lower() != b"content-length":
            return
        digits = value.strip()
        if not digits.isdigit() or len(digits) > _MAX_LENGTH_DIGITS:
            self._header_error(out, f"invalid Content-Length value {_shorten(digits)}")
            return
        length = int(digits)
        if self._clen is not None and self._clen != length:
            self._header_error(
                out, f"conflicting Content-Length headers ({self._clen} and {length})"
            )
            return
        self._clen = length

    def _start_body(self, length: int, out: list[FrameEvent]) -> None:
        self._msg_size = length
        if length > self._max:
            self._state = _SKIP_BODY
            self._remaining = length
            self._prefix = b""
        elif length == 0:
            out.append(b"")
        else:
            self._state = _BODY
            self._remaining = length

    def _header_error(
        self, out: list[FrameEvent], detail: str, *, line_consumed: bool = True
    ) -> None:
        out.append(FramingError(detail))
        self._hbuf = b""
        self._hsize = 0
        self._hseen = False
        self._clen = None
        self._state = _SKIP_HEADERS
        # If the error was raised in the middle of a line, the rest of that line is
        # part of the bad block and cannot count as the blank line that ends it.
        self._skip_nonblank = not line_consumed

    def _eof_cl(self, out: list[FrameEvent]) -> None:
        state = self._state
        if state == _HEADERS:
            if self._hseen or (self._hbuf and not self._hbuf.isspace()):
                out.append(FramingError("end of stream inside a header block"))
        elif state == _BODY:
            out.append(
                FramingError(
                    f"end of stream inside a message body "
                    f"({self._remaining} of {self._msg_size} bytes missing)"
                )
            )
        elif state == _SKIP_BODY:
            out.append(Oversized(self._prefix, self._msg_size))
        self._prefix = b""
        self._reset_cl()


def _too_large() -> str:
    return f"header block larger than {MAX_HEADER_SIZE} bytes"


def _shorten(data: bytes, limit: int = 80) -> str:
    return repr(data[:limit]) + ("..." if len(data) > limit else "")


def encode_frame(body: bytes, framing: str = "ndjson") -> bytes:
    """Frame one message body for the wire.

    ``"ndjson"``: ``body + b"\\n"`` (``ValueError`` if ``body`` contains ``b"\\n"``).
    ``"content-length"``: ``b"Content-Length: N\\r\\n\\r\\n" + body``.
    """
    if framing == "ndjson":
        if b"\n" in body:
            raise ValueError("an NDJSON message body must not contain a newline byte")
        return body + b"\n"
    if framing == "content-length":
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    raise ValueError(f"unknown framing {framing!r}; expected 'ndjson' or 'content-length'")
