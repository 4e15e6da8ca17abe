"""`acpstack inspect` put together: proxy, recording, analysis and the live page."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from acpstack.traffic._analyze import TrafficAnalyzer
from acpstack.traffic._proxy import run_proxy
from acpstack.traffic._record import Record, RecordingWriter, read_recording
from acpstack.traffic._web import LiveServer


async def inspect_agent(
    command: Sequence[str],
    *,
    record: Path | None = None,
    web_port: int | None = None,
    on_url: Callable[[str], None] | None = None,
    unstable: bool = False,
) -> int:
    """Proxy stdio to `command`, recording to `record` and serving the live page on
    127.0.0.1:`web_port` (0 = any free port) when given. Returns the agent's exit code."""
    writer = RecordingWriter(record) if record is not None else None
    analyzer = TrafficAnalyzer(validate=web_port is not None, unstable=unstable)
    server = None
    if web_port is not None:
        title = Path(command[0]).name + " " + " ".join(command[1:])[:200] if command else ""
        server = LiveServer(analyzer.events, title=title, note=analyzer.validation_note)
        url = await server.start(web_port)
        if on_url is not None:
            on_url(url)

    def observe(record_: Record) -> None:
        if writer is not None:
            writer.add(record_)
        if server is not None:
            server.publish(analyzer.add(record_))

    try:
        return await run_proxy(command, observe)
    finally:
        if writer is not None:
            writer.close()
        if server is not None:
            await server.close()


async def view_recording(
    path: Path,
    *,
    port: int = 0,
    on_url: Callable[[str], None] | None = None,
    unstable: bool = False,
) -> None:
    """Serve the page for a recording until cancelled (Ctrl-C)."""
    analyzer = TrafficAnalyzer(unstable=unstable)
    for record in read_recording(path):
        analyzer.add(record)
    server = LiveServer(analyzer.events, title=str(path), note=analyzer.validation_note)
    url = await server.start(port)
    server.end()
    if on_url is not None:
        on_url(url)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()
