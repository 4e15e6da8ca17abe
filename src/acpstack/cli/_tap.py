"""A transport wrapper that reports every message crossing it (for `--json`).

Each direction is split into messages by the wire's own `FrameDecoder`, with the same
size limit as the connection: memory stays bounded and the work linear whatever the
peer sends. A message over the limit is reported by its size and a short prefix,
without ever being held whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec

from acpstack.rpc import trace_ids
from acpstack.transports import DataCallback, EofCallback, Transport
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, FramingError, Oversized

log = logging.getLogger("acpstack.cli")

RecordCallback = Callable[[dict[str, Any]], None]
#: How much of an oversized message a record shows.
OVERSIZED_PREFIX = 200


def record_for(direction: str, event: bytes | Oversized | FramingError) -> dict[str, Any]:
    """One `--json` record: {"direction", "message"} for a message (the raw text when it is
    not JSON; plus "traceId" and "spanId" when its `_meta` carries a `traceparent`),
    {"direction", "oversized": {size, prefix}} or {"direction", "framing_error"}."""
    if isinstance(event, Oversized):
        prefix = event.prefix[:OVERSIZED_PREFIX].decode("utf-8", errors="replace")
        return {"direction": direction, "oversized": {"size": event.size, "prefix": prefix}}
    if isinstance(event, FramingError):
        return {"direction": direction, "framing_error": event.detail}
    try:
        message: Any = msgspec.json.decode(event)
    except Exception:  # not JSON, not UTF-8, nested too deep...: show what came
        message = event.decode("utf-8", errors="replace")
    record = {"direction": direction, "message": message}
    ids = trace_ids(message)  # the W3C traceparent in its `_meta`, when it carries one
    return {**record, **ids} if ids is not None else record


class TapTransport:
    """Passes bytes through unchanged and calls `callback(record)` per message.

    direction is "send" (client to agent) or "recv" (agent to client). A failing report
    is logged; it never keeps bytes from the connection.
    """

    def __init__(
        self,
        inner: Transport,
        callback: RecordCallback,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        framing: str = "auto",
    ) -> None:
        self.inner = inner
        self.callback = callback
        self._in = FrameDecoder(max_message_size, framing)
        self._out = FrameDecoder(max_message_size, framing)

    def _report(self, direction: str, events: list[bytes | Oversized | FramingError]) -> None:
        for event in events:
            try:
                self.callback(record_for(direction, event))
            except Exception:
                log.exception("reporting a %s message failed", direction)

    def _split(self, direction: str, decoder: FrameDecoder, data: bytes | None) -> None:
        try:
            events = decoder.feed(data) if data is not None else decoder.feed_eof()
        except Exception:
            log.exception("splitting %s bytes into messages failed", direction)
            return
        self._report(direction, events)

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        def tapped(data: bytes) -> None:
            self._split("recv", self._in, data)
            on_data(data)

        def tapped_eof() -> None:
            self._split("recv", self._in, None)
            on_eof()

        self.inner.start_reading(tapped, tapped_eof)

    def pause_reading(self) -> None:
        self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.inner.resume_reading()

    def write(self, data: bytes) -> None:
        self._split("send", self._out, data)
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
