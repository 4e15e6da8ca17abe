"""A TCP proxy on 127.0.0.1 that resets every connection through it at a chosen point:
after a number of bytes from the server (mid-stream) or from the client (mid-request).
Resets are aborts (RST, no HTTP or WebSocket goodbye), as when a network or a load
balancer drops connections."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Literal

Direction = Literal["down", "up"]


class FaultyProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.server: asyncio.Server | None = None
        self.resets = 0
        self.bytes_down = 0  # from the server, over every connection
        self.accepted = 0  # connections from clients
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._armed: tuple[Direction, int] | None = None  # reset after this many more bytes
        self.fired = asyncio.Event()
        self._deaf: set[asyncio.StreamWriter] = set()  # clients that get nothing more

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    def arm(self, direction: Direction, after_bytes: int) -> None:
        """Reset every connection once `after_bytes` more bytes went `direction`."""
        self._armed = (direction, max(1, after_bytes))
        self.fired.clear()

    def disarm(self) -> None:
        self._armed = None

    def deafen(self) -> None:
        """From now on drop what the server sends on the connections open now (it is lost
        on its way, as in the socket buffers of a server about to die); new connections,
        and what the clients send, still pass."""
        self._deaf.update(client for client, _server in self._links)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        link = (writer, up_writer)
        self._links.add(link)
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer, "up"),
                self._pipe(up_reader, writer, "down"),
                return_exceptions=True,
            )
        finally:
            self._links.discard(link)
            self._deaf.discard(writer)
            for w in link:
                w.transport.abort()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: Direction
    ) -> None:
        try:
            while data := await reader.read(65536):
                if direction == "down":
                    self.bytes_down += len(data)
                armed = self._armed
                if armed is not None and armed[0] == direction:
                    if len(data) >= armed[1]:
                        writer.write(data[: armed[1] - 1])  # part of it, then the reset
                        self._reset_all()
                        return
                    self._armed = (direction, armed[1] - len(data))
                if writer in self._deaf:
                    continue
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()

    def reset_all(self) -> None:
        """Reset every connection through the proxy now."""
        self._reset_all()

    def _reset_all(self) -> None:
        self._armed = None
        self.resets += 1
        for pair in list(self._links):
            for w in pair:
                w.transport.abort()
        self.fired.set()

    async def aclose(self) -> None:
        self._reset_all()
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 5)
