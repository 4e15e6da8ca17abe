"""The official SDK's message `Transport` (`send`/`receive` of dicts, `close`) over one of
acpstack's byte transports, whose far end carries one JSON-RPC message per NDJSON line."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acpstack.transports import Transport as ByteTransport

__all__ = ["ByteTransportMessages"]

_EOF = object()


async def next_message(inbox: asyncio.Queue[Any]) -> dict[str, Any] | None:
    """The next message of a stream's inbox; None once it ended (`_EOF` was put), for
    this call and every later one."""
    item = await inbox.get()
    if item is _EOF:
        inbox.put_nowait(_EOF)
        return None
    return item  # type: ignore[no-any-return]


class ByteTransportMessages:
    def __init__(self, transport: ByteTransport) -> None:
        self.transport = transport
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._partial = b""
        self._started = False
        self._closed = False

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self.transport.start_reading(self._on_data, self._on_eof)

    def _on_data(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            if line.strip():
                self._inbox.put_nowait(json.loads(line))

    def _on_eof(self) -> None:
        self._inbox.put_nowait(_EOF)

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("Transport closed")
        self._start()
        self.transport.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await self.transport.drain()

    async def receive(self) -> dict[str, Any] | None:
        self._start()
        return await next_message(self._inbox)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.transport.close()
        self._inbox.put_nowait(_EOF)
