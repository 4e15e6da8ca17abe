"""The transparent stdio proxy of `acpstack inspect`: this process's stdin goes to the
agent's stdin and the agent's stdout to this process's stdout, chunk by chunk, unchanged.
A copy of each direction is split into frames and handed to the observers (recording,
live page); the agent's stderr is passed through line by line and observed too."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable, Sequence

from acpstack.traffic._record import Record, Side, frame_record
from acpstack.transports import StdioError, SubprocessTransport, Transport, open_stdio_transport
from acpstack.wire import FrameDecoder, FramingError, Oversized

log = logging.getLogger("acpstack.traffic")

Observer = Callable[[Record], None]
#: Frames larger than this are forwarded but recorded as a short note only.
RECORD_LIMIT = 64 * 1024 * 1024
HIGH_WATER = 1024 * 1024


class _Pump:
    """Copies bytes from `source` to `sink` at once; frames a copy for the observers."""

    def __init__(self, source: Transport, sink: Transport, side: Side, observe: Observer) -> None:
        self.source, self.sink, self.side, self.observe = source, sink, side, observe
        self.decoder = FrameDecoder(RECORD_LIMIT, "ndjson")
        self.done = asyncio.Event()
        self._draining: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.source.start_reading(self._data, self._eof)

    def _data(self, data: bytes) -> None:
        # Stamped before it is passed on: the recordings of a chain's hops (one recorder
        # per hop, one clock) then order a message hop after hop as it travelled.
        now = time.time()
        self.sink.write(data)
        if self.sink.write_buffer_size() > HIGH_WATER and self._draining is None:
            self.source.pause_reading()
            # Owner: this direction; it ends once the sink drained (reading resumes).
            self._draining = asyncio.get_running_loop().create_task(self._drain())
        self._observe(self.decoder.feed(data), now)

    async def _drain(self) -> None:
        try:
            await self.sink.drain()
        finally:
            self._draining = None
            self.source.resume_reading()

    def _eof(self) -> None:
        self._observe(self.decoder.feed_eof(), time.time())
        self.done.set()

    def _observe(self, events: Sequence[bytes | Oversized | FramingError], now: float) -> None:
        """Hand `events` to the observers, each stamped `now` (when its last byte came)."""
        for event in events:
            if isinstance(event, Oversized):
                problem = f"a frame of {event.size} bytes"
                record = frame_record(self.side, event.prefix, problem, now=now)
            elif isinstance(event, FramingError):
                record = frame_record(self.side, b"", event.detail, now=now)
            else:
                record = frame_record(self.side, event, now=now)
            self._emit(record)

    def _emit(self, record: Record) -> None:
        try:
            self.observe(record)
        except Exception:  # an observer must never break the forwarding
            log.exception("a traffic observer failed")


async def run_proxy(
    command: Sequence[str],
    observe: Observer,
    *,
    shutdown_timeout: float = 10.0,
) -> int:
    """Proxy this process's stdio to `command` until either side ends; returns the
    agent's exit code (128 + the signal number when a signal ended it)."""
    client = await open_stdio_transport()

    def stderr_line(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        with contextlib.suppress(Exception):
            observe(Record(time.time(), "agent", stderr=line))

    try:
        agent = await SubprocessTransport.spawn(
            list(command), stderr_callback=stderr_line, shutdown_timeout=shutdown_timeout
        )
    except (OSError, ValueError):
        await client.close()
        raise
    to_agent = _Pump(client, agent, "client", observe)
    to_client = _Pump(agent, client, "agent", observe)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    to_agent.start()
    to_client.start()
    waits = [asyncio.ensure_future(e.wait()) for e in (to_agent.done, to_client.done, stop)]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        # The client left (or we were told to stop): the agent gets EOF, then the ladder.
        # The agent left: nothing more to forward either way.
        await agent.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(to_client.done.wait(), shutdown_timeout)
    finally:
        for wait in waits:
            wait.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        with contextlib.suppress(StdioError, OSError):
            await client.drain()
        await client.close()
    code = agent.returncode
    if code is None:
        return 1
    return code if code >= 0 else 128 - code
