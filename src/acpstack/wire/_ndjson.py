"""NDJSON framing, the official one: one message per line.

Lines are split on the byte ``b"\\n"`` only (U+2028, ``\\x1c``, a lone ``\\r`` ... are
ordinary bytes). One trailing ``b"\\r"`` is removed from each line; lines that are empty
or only ASCII whitespace are skipped. Frames are the raw line bytes. A line longer than the
limit is skipped without being buffered (`Oversized`, with its first 4096 bytes).
"""

from __future__ import annotations

from itertools import islice
from typing import TypeGuard

from acpstack.wire._frames import PREFIX_SIZE, FrameEvent, Oversized

# A chunk whose first line is at least this long is split with `find`, line by line.
LONG_LINE = 1024


def plain_line(line: bytes, limit: int) -> bool:
    """An ordinary message line, taken as it is: not empty, not over the limit, not blank,
    no trailing CR. Anything else goes through `NdjsonReader._line`."""
    return 0 < len(line) <= limit and line[-1] != 13 and not line.isspace()


class NdjsonReader:
    """Splits a byte stream into lines; holds at most ``max + 1`` bytes of one line."""

    __slots__ = (
        "_max",
        "_pending",
        "_pending_len",
        "_discarding",
        "_disc_size",
        "_disc_nonblank",
        "_prefix",
    )

    def __init__(self, max_message_size: int) -> None:
        self._max = max_message_size
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._discarding = False
        self._disc_size = 0
        self._disc_nonblank = False
        self._prefix = b""

    @property
    def buffered(self) -> int:
        return self._pending_len + len(self._prefix)

    def whole_line(self, data: bytes | bytearray | memoryview) -> TypeGuard[bytes]:
        """The common chunk, fast: whether ``data`` is exactly one whole line, within the
        limit, with nothing buffered before it. Consumes nothing either way. Then `feed`
        would make one message of it at most (none if it is blank), which is what a JSON
        decoder makes of ``data`` as it is (a trailing CR or newline is JSON whitespace)."""
        end = len(data) - 1
        return (
            end > 0
            and data[end] == 10
            and type(data) is bytes
            and not self._pending
            and not self._discarding
            and end <= self._max
            and data.find(b"\n", 0, end) < 0
        )

    def feed(self, data: bytes) -> list[FrameEvent]:
        out: list[FrameEvent] = []
        nl = data.find(b"\n")
        if nl < 0:
            if self._discarding:
                self._discard(data)
            else:
                self._append_pending(data)
            return out
        if nl >= LONG_LINE:
            return self._feed_long(data, nl, out)
        parts = data.split(b"\n")
        # parts[0] ends the current line, parts[-1] starts a new one.
        self._end_current(parts[0], out)
        if len(parts) == 2:
            if parts[1]:
                self._append_pending(parts[1])
            return out
        mx = self._max
        append = out.append
        plain = plain_line
        for line in islice(parts, 1, len(parts) - 1):
            if plain(line, mx):
                append(line)
            elif line:
                self._line(line, out)  # CR LF, blank, oversized
        last = parts[-1]
        if last:
            self._append_pending(last)
        return out

    def _feed_long(self, data: bytes, nl: int, out: list[FrameEvent]) -> list[FrameEvent]:
        """`feed` for long lines: each newline found by `find` (memchr) and each line
        sliced once; `split` would walk the bytes one at a time."""
        self._end_current(data[:nl], out)
        mx = self._max
        start = nl + 1
        nl = data.find(b"\n", start)
        while nl >= 0:
            line = data[start:nl]
            if plain_line(line, mx):
                out.append(line)
            elif line:
                self._line(line, out)  # CR LF, blank, oversized
            start = nl + 1
            nl = data.find(b"\n", start)
        if start < len(data):
            self._append_pending(data[start:])
        return out

    def _end_current(self, first: bytes, out: list[FrameEvent]) -> None:
        """`first` (the bytes before a chunk's first newline) ends the current line."""
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
        elif plain_line(first, self._max):
            out.append(first)  # the common case: a chunk that starts with a whole line
        elif first:
            self._line(first, out)

    def finish(self, out: list[FrameEvent]) -> None:
        if self._discarding:
            self._finish_discard(out)
        elif self._pending:
            line = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            self._line(line, out)

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
