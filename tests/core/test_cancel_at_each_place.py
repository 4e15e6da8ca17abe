"""A caller cancelled while it ends the tasks it owns sees CancelledError, at each place
that used to swallow it (`suppress(CancelledError)` around `await task`), now
`cancel_and_wait`. Each test lands the caller's cancellation while it is certainly still
waiting for its task: the owned task is stubborn (cancelled, it waits for the test), or the
caller is cancelled from inside the task's own ending. Nothing here waits on a clock.

`Connection.aclose` and the turn's own stop reason are covered in test_cancel_and_wait.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from acpstack.agent import MemorySessionStore, SessionAgent, connect_agent
from acpstack.agent._turn import Turn
from acpstack.schema import v1 as acp
from acpstack.transports import StreamTransport, memory_pair

sys.path.insert(0, str(Path(__file__).parent))
from tests_core_clients import WAIT, Stubborn, cancel_while_waiting  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


class Lines:
    """What a raw peer read, message by message, with a wait for an answer."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._partial = b""

    def data(self, data: bytes) -> None:
        *complete, self._partial = (self._partial + data).split(b"\n")
        self.messages.extend(json.loads(x) for x in complete if x.strip())
        self._arrived.set()

    async def answer(self, request_id: int) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            while True:
                for message in self.messages:
                    if message.get("id") == request_id and "method" not in message:
                        return message
                self._arrived.clear()
                await self._arrived.wait()


@pytest.fixture
async def tcp_pair() -> AsyncIterator[Callable[[], Any]]:
    """Real sockets on 127.0.0.1: `connect()` gives (our StreamTransport, the server's
    reader, the server's writer)."""
    accepted: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put((reader, writer))

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    writers: list[asyncio.StreamWriter] = []

    async def connect() -> tuple[StreamTransport, asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        theirs = await asyncio.wait_for(accepted.get(), WAIT)
        writers.extend([writer, theirs[1]])
        return StreamTransport(reader, writer), theirs[0], theirs[1]

    try:
        yield connect
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()


# -- transports ---------------------------------------------------------------------------


async def test_stream_transport_close(tcp_pair: Callable[[], Any]) -> None:
    """`StreamTransport.close` ends its reader task; the closer is cancelled in the very
    moment that task ends (from its end-of-input callback)."""
    transport, _, _ = await tcp_pair()
    closing: asyncio.Task[None] | None = None
    eof_seen = asyncio.Event()

    def on_eof() -> None:
        eof_seen.set()
        if closing is not None:
            closing.cancel()

    transport.start_reading(lambda data: None, on_eof)
    transport.pause_reading()  # the reader task waits to read: only `close` ends it
    closing = asyncio.create_task(transport.close())
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(closing, WAIT)
    assert eof_seen.is_set()


async def test_remote_transport_close_while_a_message_is_being_sent() -> None:
    """`MessageTransport.close` (the base of the HTTP transport) cancels and awaits every
    task it started; here a sender whose send of one message is stubborn. The subclass
    gives only the two hooks the base asks of a transport (no server takes part)."""
    from acpstack.transports._remote_base import MessageTransport

    stubborn = Stubborn()

    class StubbornSender(MessageTransport):
        def _start_receiving(self) -> None:
            pass

        async def _send_one(self, message: bytes) -> None:
            await stubborn.run()

    transport = StubbornSender(1 << 20)
    transport.start_reading(lambda data: None, lambda: None)
    transport.write(line({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}))
    await asyncio.wait_for(stubborn.started.wait(), WAIT)
    closing = asyncio.create_task(transport.close())
    await cancel_while_waiting(closing, stubborn)
    await asyncio.wait_for(transport._stop_tasks(), WAIT)
    assert not transport._tasks


# -- the agent: session/close waits for the turn it cancels ---------------------------------


class StubbornTurns(SessionAgent):
    def __init__(self, stubborn: Stubborn) -> None:
        super().__init__(store=MemorySessionStore())
        self.stubborn = stubborn

    async def prompt(self, turn: Turn) -> acp.StopReason | None:
        await self.stubborn.run()
        return None


async def test_session_close_waiting_for_its_turn_is_cancelled_by_the_client() -> None:
    """`session/close` cancels the turn and waits for it; the client's `$/cancel_request`
    for the close lands in that wait: the close is answered as cancelled, not carried on."""
    stubborn = Stubborn()
    agent_side, raw = memory_pair()
    lines = Lines()
    raw.start_reading(lines.data, lambda: None)
    connection = connect_agent(StubbornTurns(stubborn), agent_side)
    connection.start()
    try:
        raw.write(line({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}))
        new = {"cwd": "/", "mcpServers": []}
        raw.write(line({"id": 1, "method": "session/new", "params": new}))
        sid = (await lines.answer(1))["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        raw.write(line({"id": 2, "method": "session/prompt", "params": prompt}))
        await asyncio.wait_for(stubborn.started.wait(), WAIT)
        raw.write(line({"id": 3, "method": "session/close", "params": {"sessionId": sid}}))
        await asyncio.wait_for(stubborn.cancelled.wait(), WAIT)
        raw.write(line({"method": "$/cancel_request", "params": {"requestId": 3}}))
        closed = await lines.answer(3)
        stubborn.release.set()
        assert closed.get("error", {}).get("code") == -32800, closed
    finally:
        stubborn.release.set()
        await asyncio.wait_for(connection.aclose(), WAIT)


# -- the client: failover, MCP servers it hosts ---------------------------------------------


async def test_failover_close_while_reconnecting(tcp_pair: Callable[[], Any]) -> None:
    """`FailoverTransport.close` ends its reconnecting task (here: stuck in connecting)."""
    from acpstack.client._failover import FailoverTransport

    stubborn = Stubborn()

    async def connect() -> Any:
        await stubborn.run()

    first, server_reader, server_writer = await tcp_pair()
    failover = FailoverTransport(connect, first)
    lines = Lines()
    failover.start_reading(lines.data, lambda: None)
    failover.write(line({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}))
    await asyncio.wait_for(server_reader.readline(), WAIT)
    server_writer.write(line({"id": 0, "result": {"protocolVersion": 1}}))
    await lines.answer(0)
    server_writer.close()  # the connection breaks: the transport reconnects
    await asyncio.wait_for(stubborn.started.wait(), WAIT)
    closing = asyncio.create_task(failover.close())
    await cancel_while_waiting(closing, stubborn)
    await asyncio.wait_for(failover.close(), WAIT)


async def test_mcp_host_close_while_its_server_ends() -> None:
    """`McpHost.aclose` ends each hosted server's task; the closer is cancelled while the
    server is ending (from the server's own lifespan teardown)."""
    from contextlib import asynccontextmanager

    from mcp.server import Server

    from acpstack.client._mcp_host import McpHost
    from acpstack.schema import v1_unstable as acpu

    closing: asyncio.Task[None] | None = None
    torn_down = asyncio.Event()

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            torn_down.set()
            if closing is not None:
                closing.cancel()

    host = McpHost()
    declared = host.add("tools", Server("tools", lifespan=lifespan))
    ping = acpu.MessageMcpRequest(server_id=declared.server_id, request_id="1", method="ping")
    answered = await asyncio.wait_for(host.handle(ping), WAIT)  # starts the server's task
    assert answered.result == {}, answered
    closing = asyncio.create_task(host.aclose())
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(closing, WAIT)
    assert torn_down.is_set()
    closing = None
    await asyncio.wait_for(host.aclose(), WAIT)


# -- the chat: the line being read when the chat ends ---------------------------------------


async def test_chat_read_abandoned_when_the_chat_quits() -> None:
    """The chat's read of the next line, cancelled once the chat quits (`_read_or_quit`).
    The reader is a stand-in for the terminal (prompt_toolkit needs a real one): only its
    `read_line` and the chat's `quit` event take part."""
    from types import SimpleNamespace

    from acpstack.cli._chat_interactive import _read_or_quit

    stubborn = Stubborn()

    async def read_line(prompt: str) -> str:
        await stubborn.run()
        return "never"

    chat: Any = SimpleNamespace(input=SimpleNamespace(read_line=read_line), quit=asyncio.Event())
    reading = asyncio.create_task(_read_or_quit(chat, "> "))
    await asyncio.wait_for(stubborn.started.wait(), WAIT)
    chat.quit.set()
    await cancel_while_waiting(reading, stubborn)


# -- the agent: MCP servers the client offers over ACP, MCP servers it runs ----------------


async def test_mcp_over_acp_streams_closed_while_a_call_is_in_flight() -> None:
    """`AcpMcpTransport.streams()` ends its pump on the way out; the task leaving the
    context is cancelled while it waits for the pump (by the cancelled call's own ending).
    The client is a stand-in for the ACP peer: only its `mcp/message` call takes part."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    from acpstack.agent._mcp_acp import AcpMcpTransport

    calling = asyncio.Event()
    leaving: asyncio.Task[None] | None = None

    class Client:
        async def mcp_message(self, params: Any, timeout: float | None = None) -> Any:
            calling.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if leaving is not None:
                    leaving.cancel()
                raise

    transport = AcpMcpTransport(Client(), "server-1")  # type: ignore[arg-type]

    async def use_then_leave() -> None:
        async with transport.streams() as (_, writes):
            request = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list")
            await writes.send(SessionMessage(request))
            await asyncio.wait_for(calling.wait(), WAIT)

    leaving = asyncio.create_task(use_then_leave())
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(leaving, WAIT)


async def test_mcp_server_stopped_while_it_leaves() -> None:
    """`McpConnections` stops a server that did not start in time and waits for its task
    to leave its transport; the caller of `start` is cancelled in that wait. The server is
    the SDK's own, in this process; its transport is slow to leave until the test says."""
    from contextlib import asynccontextmanager

    from mcp.client._memory import InMemoryTransport
    from mcp.server import Server

    from acpstack.agent._mcp import McpConnections

    leaving = asyncio.Event()
    release = asyncio.Event()

    @asynccontextmanager
    async def slow_to_leave() -> AsyncIterator[Any]:
        async with InMemoryTransport(Server("tools")) as streams:
            try:
                yield streams
            finally:
                leaving.set()
                await release.wait()

    class SlowToLeave(McpConnections):
        def _transport(self, config: Any) -> Any:
            return slow_to_leave()

    connections = SlowToLeave(connect_timeout=0)  # not started in time: stopped at once
    config = acp.McpServerStdio(name="tools", command="unused", args=[], env=[])
    starting = asyncio.create_task(connections.start([config]))
    try:
        await asyncio.wait_for(leaving.wait(), WAIT)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(starting, WAIT)
    finally:
        release.set()
        await asyncio.wait_for(connections.aclose(), WAIT)
