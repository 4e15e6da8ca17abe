"""A lingering close for the HTTP connections `acpstack serve` ends before it has read a
request to its end (a 413 for a body too large, a 408, a 431).

Closing a TCP socket that holds unread input makes the kernel answer with a reset, and a
reset makes the client's kernel drop what the client has received but not read yet: the
answer that explained the refusal is lost, and the client sees "connection reset" instead
of its 413. So such a connection is closed in steps: the answer is sent and the writing
side shut (the client reads the answer, then end of stream), what the client still sends
is read and thrown away, and the socket closes when the client closes its side, or after
`LINGER_SECONDS` or `LINGER_BYTES` at the latest. A connection with nothing left unread
closes at once, as before.

This is what lets the server read 64 KiB at a time (`acpstack._reads`): with 256 KiB
reads, a body of up to that size was read whole before the refusal, and only larger ones
lost their answer.
"""

from __future__ import annotations

import array
import asyncio
import sys
from collections.abc import Callable
from typing import Any

if sys.platform != "win32":
    import fcntl
    import termios

# bounds on what a refused client may still send before the socket is closed anyway
LINGER_SECONDS = 5.0
LINGER_BYTES = 16 * 1024 * 1024


def _bytes_waiting(transport: asyncio.BaseTransport) -> int:
    """How many received bytes the socket holds that the server has not read (0 when it
    cannot tell)."""
    sock = transport.get_extra_info("socket")
    if sock is None or sys.platform == "win32":
        return 0
    count = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    except OSError:
        return 0
    return count[0]


class LingeringTransport:
    """Wraps a connection's transport for uvicorn's HTTP protocol: `close` lingers when
    the request in progress was not read to its end (`unread()`) or input is waiting;
    everything else goes to the transport. While it lingers, `is_closing` is True (so the
    protocol takes no more requests) and the protocol hands what it reads to `discard`."""

    def __init__(self, transport: asyncio.Transport, unread: Callable[[], bool]) -> None:
        self.transport = transport
        self._unread = unread
        self.lingering = False
        self._discarded = 0
        self._timer: asyncio.TimerHandle | None = None
        self.write = transport.write  # the answers' path, without a lookup per call

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self.transport.is_closing()

    def close(self) -> None:
        if self.is_closing():
            return
        if not self.transport.can_write_eof() or not (
            self._unread() or _bytes_waiting(self.transport)
        ):
            self.transport.close()
            return
        self.lingering = True
        self.transport.write_eof()  # after what is buffered: the answer goes out whole
        self.transport.resume_reading()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(LINGER_SECONDS, self.close_now)

    def discard(self, data: bytes) -> None:
        """What the client sent after the answer: thrown away, up to `LINGER_BYTES`."""
        self._discarded += len(data)
        if self._discarded > LINGER_BYTES:
            self.close_now()

    def close_now(self) -> None:
        """Close without lingering (or end a linger). The client closing its side ends it
        too: the transport then closes by itself."""
        self.cancel_timer()
        self.transport.close()

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
