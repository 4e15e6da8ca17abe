"""Message transports: objects that move whole JSON-RPC messages (`dict`s) instead of bytes.

`Transport` is the official SDK's protocol for them (`send`, `receive` returning None at
the end, `close`); `MessagePipe` carries one under acpstack's byte-level runtime, which
frames each message as one line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any, Protocol, runtime_checkable

from acpstack.transports import DataCallback, EofCallback

__all__ = ["MessagePipe", "Transport"]

log = logging.getLogger("acp")


@runtime_checkable
class Transport(Protocol):
    async def send(self, message: dict[str, Any]) -> None: ...
    async def receive(self) -> dict[str, Any] | None: ...
    async def close(self) -> None: ...


class MessagePipe:
    """acpstack's Transport over a message `Transport`: received messages become NDJSON
    lines for the wire; the lines the wire writes are sent as messages, in order."""

    def __init__(self, messages: Transport) -> None:
        self.messages = messages
        self._reader: asyncio.Task[None] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._partial = b""
        self._running = asyncio.Event()
        self._running.set()
        self._closed = False

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        loop = asyncio.get_running_loop()
        self._reader = loop.create_task(self._pump(on_data, on_eof))
        self._sender = loop.create_task(self._send_all())

    async def _pump(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        try:
            while True:
                await self._running.wait()
                try:
                    message = await self.messages.receive()
                except (ConnectionError, OSError):
                    message = None
                if message is None:
                    break
                on_data(json.dumps(message).encode() + b"\n")
        finally:
            on_eof()

    async def _send_all(self) -> None:
        while True:
            line = await self._outbox.get()
            try:
                await self.messages.send(json.loads(line))
            except Exception:
                log.exception("sending a message failed")

    def pause_reading(self) -> None:
        self._running.clear()

    def resume_reading(self) -> None:
        self._running.set()

    def write(self, data: bytes) -> None:
        if self._closed:
            return
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            if line.strip():
                self._outbox.put_nowait(line)

    async def drain(self) -> None:
        return None

    def write_buffer_size(self) -> int:
        return self._outbox.qsize()

    async def settle(self) -> None:
        return None

    def close_reason(self) -> str | None:
        return None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (self._reader, self._sender):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.messages.close()
