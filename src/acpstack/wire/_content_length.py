"""Content-Length framing (LSP style, opt-in).

``Content-Length: N`` plus optional other headers (ignored), each ending in ``\\r\\n`` or
``\\n``, a blank line, then exactly N bytes of body; the frame is the body as sent. A body
over the limit is skipped (`Oversized`); a malformed header block is a `FramingError`,
after which the reader resynchronises on the next blank line.
"""

from __future__ import annotations

import re
from typing import Final

from acpstack.wire._frames import MAX_HEADER_SIZE, PREFIX_SIZE, FrameEvent, FramingError, Oversized

# The usual header block, handled without the general header parser.
_SIMPLE_HEADER: Final = re.compile(rb"content-length: ?([0-9]{1,19})\r?\n\r?\n", re.IGNORECASE)
_MAX_LENGTH_DIGITS: Final = 19

# Parser states.
_HEADERS: Final = 0
_BODY: Final = 1
_SKIP_BODY: Final = 2
_SKIP_HEADERS: Final = 3


class ContentLengthReader:
    """Splits a byte stream into Content-Length framed bodies."""

    __slots__ = (
        "_max",
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
        "_prefix",
    )

    def __init__(self, max_message_size: int) -> None:
        self._max = max_message_size
        self._prefix = b""
        self._reset()

    @property
    def buffered(self) -> int:
        return len(self._hbuf) + self._body_len + len(self._prefix)

    def _reset(self) -> None:
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

    def feed(self, data: bytes) -> list[FrameEvent]:
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

    def finish(self, out: list[FrameEvent]) -> None:
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
        self._reset()


def _too_large() -> str:
    return f"header block larger than {MAX_HEADER_SIZE} bytes"


def _shorten(data: bytes, limit: int = 80) -> str:
    return repr(data[:limit]) + ("..." if len(data) > limit else "")
