"""A transport wrapper that reports every NDJSON message crossing it (for `--json`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from acpstack.transports import Transport
from acpstack.transports._base import DataCallback, EofCallback

MessageCallback = Callable[[str, Any], None]


class _Lines:
    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> list[bytes]:
        data = self._pending + data
        *lines, self._pending = data.split(b"\n")
        return [line for line in lines if line.strip()]


class TapTransport:
    """Passes bytes through unchanged and calls `callback(direction, message)` per message.

    direction is "send" (client to agent) or "recv" (agent to client); the message is the
    decoded JSON (or the raw text when a line is not JSON).
    """

    def __init__(self, inner: Transport, callback: MessageCallback) -> None:
        self.inner = inner
        self.callback = callback
        self._in = _Lines()
        self._out = _Lines()

    def _report(self, direction: str, lines: list[bytes]) -> None:
        for line in lines:
            try:
                message: Any = msgspec.json.decode(line)
            except msgspec.DecodeError:
                message = line.decode("utf-8", errors="replace")
            self.callback(direction, message)

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        def tapped(data: bytes) -> None:
            self._report("recv", self._in.feed(data))
            on_data(data)

        self.inner.start_reading(tapped, on_eof)

    def pause_reading(self) -> None:
        self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.inner.resume_reading()

    def write(self, data: bytes) -> None:
        self._report("send", self._out.feed(data))
        self.inner.write(data)

    async def drain(self) -> None:
        await self.inner.drain()

    def write_buffer_size(self) -> int:
        return self.inner.write_buffer_size()

    async def close(self) -> None:
        await self.inner.close()

    async def settle(self) -> None:
        await self.inner.settle()

    def close_reason(self) -> str | None:
        return self.inner.close_reason()
