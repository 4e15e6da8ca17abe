"""Writing frames in order, coalesced: what `Connection` sends goes through one `Writer`."""

from __future__ import annotations

import asyncio

from acpstack.transports import Transport

WRITE_HIGH_WATER = 1024 * 1024
FLUSH_SIZE = 256 * 1024  # bounds the buffer of a producer that never yields


class Writer:
    """Sends frames in the order they come.

    The first frame after bytes arrived (`at_once` set by the reader) or after a flush is
    written at once: a lone answer waits for nothing and costs no end-of-turn callback.
    Frames that follow it are coalesced into one write at the end of the event-loop turn
    (or per FLUSH_SIZE bytes): on a busy pipe that is far cheaper than a write per message."""

    def __init__(self, transport: Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.at_once: bool = True
        self._loop = loop
        self._out: list[bytes] = []
        self._out_size = 0
        self._flush_scheduled = False

    def send(self, frame: bytes) -> None:
        """Send `frame` after everything sent before it."""
        if self.at_once and not self._out:
            self.at_once = False
            self.transport.write(frame)
            return
        self._out.append(frame)
        self._out_size += len(frame)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)
        if self._out_size >= FLUSH_SIZE:
            self.flush()
            self._flush_scheduled = True  # the end-of-turn callback is still pending

    def idle(self) -> bool:
        """Nothing waits to be written: a frame may go to the transport directly."""
        return not self._out

    def flush(self) -> None:
        """Write what waits now."""
        self._flush_scheduled = False
        self.at_once = True
        if not self._out:
            return
        data = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        self._out_size = 0
        self.transport.write(data)

    def backed_up(self) -> bool:
        """Whether the transport holds more than WRITE_HIGH_WATER unsent bytes."""
        return self.transport.write_buffer_size() > WRITE_HIGH_WATER

    async def drain(self) -> None:
        """Write what waits, then wait until the transport's buffer has room."""
        self.flush()
        await self.transport.drain()
