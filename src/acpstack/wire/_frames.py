"""What framing produces, whatever the framing: messages, oversized messages, errors."""

from __future__ import annotations

from typing import Final, TypeAlias

from msgspec import Struct

DEFAULT_MAX_MESSAGE_SIZE: Final = 64 * 1024 * 1024
"""The largest message read whole by default (64 MiB); a longer one becomes `Oversized`."""
#: How many leading bytes of an oversized message `Oversized.prefix` keeps.
PREFIX_SIZE: Final = 4096
#: Largest accepted content-length header block (all header lines, line endings included).
MAX_HEADER_SIZE: Final = 64 * 1024


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
