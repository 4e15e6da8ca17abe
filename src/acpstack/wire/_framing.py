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
from typing import Final, TypeGuard

from acpstack.wire._content_length import ContentLengthReader
from acpstack.wire._frames import (
    DEFAULT_MAX_MESSAGE_SIZE,
    MAX_HEADER_SIZE,
    PREFIX_SIZE,
    FrameEvent,
    FramingError,
    Oversized,
)
from acpstack.wire._ndjson import NdjsonReader

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

_FRAMINGS: Final = ("ndjson", "content-length", "auto")
# Stream openings that select content-length framing in "auto" mode (lower case).
_CL_SIGNATURES: Final = (b"content-length:", b"content-type:")
_DETECT_LEN: Final = max(len(s) for s in _CL_SIGNATURES)  # 15
# In "auto" mode a run of leading whitespace is buffered until the first real byte
# arrives; a whitespace-only line longer than this settles the question (NDJSON).
_AUTO_WS_LIMIT: Final = 4096
_NON_WS: Final = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _not_whole(data: bytes | bytearray | memoryview) -> TypeGuard[bytes]:
    return False  # not NDJSON (yet): every chunk goes through `feed`


class FrameDecoder:
    """Incremental, sans-IO splitter of a byte stream into messages: the reader of the
    stream's framing, chosen up front or (``"auto"``) from the stream's first bytes."""

    __slots__ = ("_max", "_framing", "_reader", "_auto_buf", "whole_line")

    #: Without taking anything: True when ``data`` is one whole line (within the limit,
    #: nothing buffered before it), of which `feed` would make one message at most: the
    #: JSON value of ``data`` as it is, newline included (see `NdjsonReader.whole_line`).
    whole_line: Callable[[bytes | bytearray | memoryview], TypeGuard[bytes]]

    def __init__(
        self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, framing: str = "auto"
    ) -> None:
        if framing not in _FRAMINGS:
            raise ValueError(f"unknown framing {framing!r}; expected one of {_FRAMINGS}")
        if max_message_size < 1:
            raise ValueError("max_message_size must be at least 1")
        self._max = max_message_size
        self._framing = "auto"
        self._reader: NdjsonReader | ContentLengthReader | None = None
        self.whole_line = _not_whole
        self._auto_buf = b""
        if framing != "auto":
            self._choose(framing)

    @property
    def framing(self) -> str:
        """``"ndjson"`` or ``"content-length"`` once known, ``"auto"`` before that."""
        return self._framing

    @property
    def max_message_size(self) -> int:
        """The largest message, in bytes, delivered whole; longer ones become `Oversized`."""
        return self._max

    @property
    def buffered(self) -> int:
        """Number of stream bytes currently held by the decoder (all buffers)."""
        held = 0 if self._reader is None else self._reader.buffered
        return len(self._auto_buf) + held

    def feed(self, data: bytes | bytearray | memoryview) -> list[FrameEvent]:
        """Consume ``data``; return the events it completes, in stream order."""
        if type(data) is not bytes:
            data = bytes(data)
        if not data:
            return []
        if self._reader is None:
            return self._feed_auto(data)
        return self._reader.feed(data)

    def feed_eof(self) -> list[FrameEvent]:
        """Signal end of stream; flush a final line that has no trailing newline.

        The decoder is left empty (its framing is kept) and may be fed again.
        """
        out: list[FrameEvent] = []
        if self._reader is None:
            buf, self._auto_buf = self._auto_buf, b""
            if _NON_WS.search(buf) is None:
                return out
            # Stream too short to be a content-length header block: one final line.
            reader = self._choose("ndjson")
            out = reader.feed(buf)
        else:
            reader = self._reader
        reader.finish(out)
        return out

    def _choose(self, framing: str) -> NdjsonReader | ContentLengthReader:
        self._framing = framing
        if framing == "ndjson":
            ndjson = NdjsonReader(self._max)
            self._reader = ndjson
            self.whole_line = ndjson.whole_line
            return ndjson
        reader = ContentLengthReader(self._max)
        self._reader = reader
        return reader

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
        reader = self._choose(decided)
        _log.debug("wire framing detected: %s", decided)
        return reader.feed(buf)


def encode_frame(body: bytes, framing: str = "ndjson") -> bytes:
    """Frame one message body for the wire.

    ``"ndjson"``: ``body + b"\\n"`` (``ValueError`` if ``body`` contains ``b"\\n"``).
    ``"content-length"``: ``b"Content-Length: N\\r\\n\\r\\n" + body``.
    """
    if framing == "ndjson":
        if body.find(b"\n") >= 0:
            raise ValueError("an NDJSON message body must not contain a newline byte")
        return body + b"\n"
    if framing == "content-length":
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    raise ValueError(f"unknown framing {framing!r}; expected 'ndjson' or 'content-length'")
