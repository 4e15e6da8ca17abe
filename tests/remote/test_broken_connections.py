"""The HTTP client when the way to the server breaks: a real server behind a small TCP
proxy in this test (real sockets on 127.0.0.1) that can cut one stream or answer for a
server it lost (502), as a load balancer does when the server behind it dies. A broken
stream is resumed where it was (the server numbers its events); without resuming
(`resume_timeout=0`), or on a 502/503/504, the whole connection ends, so that
`reconnect=True` fails over."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from _serving import running

import acpstack.events as ev
from acpstack import ConnectionClosed, RequestError
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import ClientRuntime, FailoverEvent, connect_remote, is_connection_lost
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

pytestmark = pytest.mark.timeout(30)
STORE = MemorySessionStore()


RELEASE = asyncio.Event()  # ends the turns that wait for it ('hold')
SLOW_RESUME: set[str] = set()  # sessions whose session/resume waits for RESUME_GATE
RESUME_GATE = asyncio.Event()


class HoldingAgent(SessionAgent):
    """'wait' sends a chunk and keeps its turn open; 'hold' sends one, waits for RELEASE
    and sends another; anything else is echoed."""

    def __init__(self) -> None:
        super().__init__(store=STORE)

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        if params.session_id in SLOW_RESUME:
            await RESUME_GATE.wait()
        return await super().session_resume(params)

    async def prompt(self, turn: Turn) -> acp.StopReason:
        await turn.say(f"echo: {turn.text}")
        if turn.text == "wait":
            await asyncio.Event().wait()
        if turn.text == "hold":
            await RELEASE.wait()
            await turn.say("released")
        return "end_turn"


class Proxy:
    """Forwards TCP to `target`; remembers which client connections are session streams
    (a GET with Acp-Session-Id) and can cut them, or answer the next POST with 502."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.session_streams: list[asyncio.StreamWriter] = []
        self.stream_opened = asyncio.Event()
        self.fail_next_post = False
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        await asyncio.gather(
            self._requests(reader, up_writer, writer),
            self._pipe(up_reader, writer),
            return_exceptions=True,
        )

    async def _requests(
        self,
        reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Client to server, one request at a time (keep-alive connections carry many)."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                if head.startswith(b"POST") and self.fail_next_post:
                    self.fail_next_post = False
                    text = b"the server is gone"
                    writer.write(
                        b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(text), text)
                    )
                    await writer.drain()
                    return
                if head.startswith(b"GET") and b"acp-session-id:" in head.lower():
                    self.session_streams.append(writer)
                    self.stream_opened.set()
                up_writer.write(head + body)
                await up_writer.drain()
        finally:
            up_writer.close()
            writer.close()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    def cut_session_streams(self) -> None:
        """End every session stream abruptly (no end of the chunked body)."""
        for writer in self.session_streams:
            transport = writer.transport
            assert isinstance(transport, asyncio.Transport)
            transport.abort()
        self.session_streams.clear()

    async def aclose(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 5)


@contextlib.asynccontextmanager
async def proxied() -> AsyncIterator[tuple[Proxy, str]]:
    app = AgentServer(HoldingAgent)
    async with running(app) as url:
        proxy = Proxy(int(url.rsplit(":", 1)[1].split("/")[0]))
        port = await proxy.start()
        try:
            yield proxy, f"http://127.0.0.1:{port}/acp"
        finally:
            await proxy.aclose()


async def test_a_broken_session_stream_is_resumed_and_the_turn_answered() -> None:
    RELEASE.clear()
    texts: list[str] = []

    def on_update(_sid: str, update: object) -> None:
        if isinstance(update, ev.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            texts.append(update.content.text)

    async with proxied() as (proxy, url):
        runtime = ClientRuntime(on_update=on_update)
        async with connect_remote(url, runtime, one_stream=False) as conn:
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            turn = asyncio.ensure_future(runtime.prompt(sid, "hold"))
            await asyncio.wait_for(proxy.stream_opened.wait(), 10)
            proxy.stream_opened.clear()
            proxy.cut_session_streams()
            await asyncio.wait_for(proxy.stream_opened.wait(), 10)  # opened again
            RELEASE.set()  # the rest of the turn streams on the resumed stream
            assert (await asyncio.wait_for(turn, 10)).stop_reason == "end_turn"
            assert getattr(conn.transport, "resumes", 0) >= 1
            assert texts == ["echo: hold", "released"]  # each once, in order


async def test_a_session_stream_that_breaks_ends_the_connection() -> None:
    async with proxied() as (proxy, url):
        runtime = ClientRuntime()
        async with connect_remote(url, runtime, resume_timeout=0, one_stream=False):
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            other = (await runtime.new_session("/tmp")).session_id
            await runtime.prompt(other, "hello")  # its stream is open too
            turn = asyncio.ensure_future(runtime.prompt(sid, "wait"))
            await asyncio.wait_for(proxy.stream_opened.wait(), 10)
            proxy.cut_session_streams()
            with pytest.raises((RequestError, ConnectionClosed)):
                await asyncio.wait_for(turn, 10)
            # Not only that session: the whole connection is over.
            with pytest.raises(ConnectionClosed, match="stream ended: the stream failed"):
                await asyncio.wait_for(runtime.prompt(other, "still there?"), 10)


async def test_a_proxy_that_lost_the_server_ends_the_connection() -> None:
    async with proxied() as (proxy, url):
        runtime = ClientRuntime()
        async with connect_remote(url, runtime):
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            proxy.fail_next_post = True
            with pytest.raises(ConnectionClosed, match="502 Bad Gateway"):
                await asyncio.wait_for(runtime.prompt(sid, "hello"), 10)


async def test_with_reconnect_a_turn_that_began_is_lost_not_run_again() -> None:
    seen: list[str] = []
    began = asyncio.Event()

    def on_update(_sid: str, update: object) -> None:
        if isinstance(update, ev.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            seen.append(update.content.text)
            began.set()

    async with proxied() as (proxy, url):
        runtime = ClientRuntime(on_update=on_update)
        events: list[FailoverEvent] = []
        async with connect_remote(
            url, runtime, reconnect=True, resume_timeout=0, one_stream=False
        ) as conn:
            conn.transport.policy.on_event = events.append
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            turn = asyncio.ensure_future(runtime.prompt(sid, "wait"))
            await asyncio.wait_for(began.wait(), 10)  # the agent runs the turn
            proxy.cut_session_streams()
            with pytest.raises(RequestError) as lost:
                await asyncio.wait_for(turn, 20)
            assert is_connection_lost(lost.value)  # sent again, and refused: it began
            assert "began" in lost.value.message
            assert (await runtime.prompt(sid, "after")).stop_reason == "end_turn"
        assert [e.kind for e in events] == ["lost", "reattached", "reconnected"]
        assert events[1].sessions == events[2].sessions == [sid]
        assert seen.count("echo: wait") == 1  # never run twice


async def test_with_reconnect_a_prompt_the_server_never_began_is_answered() -> None:
    async with proxied() as (proxy, url):
        runtime = ClientRuntime()
        async with connect_remote(url, runtime, reconnect=True, resume_timeout=0, one_stream=False):
            await runtime.initialize()
            sid = (await runtime.new_session("/tmp")).session_id
            # the session's stream opens before the prompt is POSTed: cut it then, so the
            # prompt never reaches the agent before the connection breaks
            turn = asyncio.ensure_future(runtime.prompt(sid, "hello"))
            await asyncio.wait_for(proxy.stream_opened.wait(), 10)
            proxy.cut_session_streams()
            assert (await asyncio.wait_for(turn, 20)).stop_reason == "end_turn"


@contextlib.asynccontextmanager
async def gated_resume(*sessions: str) -> AsyncIterator[None]:
    global RESUME_GATE
    RESUME_GATE = asyncio.Event()  # of this test's event loop
    SLOW_RESUME.update(sessions)
    try:
        yield
    finally:
        RESUME_GATE.set()
        SLOW_RESUME.difference_update(sessions)


class Events:
    def __init__(self) -> None:
        self.seen: list[FailoverEvent] = []
        self.changed = asyncio.Event()

    def __call__(self, event: FailoverEvent) -> None:
        self.seen.append(event)
        self.changed.set()

    def kinds(self) -> list[str]:
        return [e.kind for e in self.seen]

    async def wait_for(self, kind: str, sessions: list[str] | None = None) -> None:
        async with asyncio.timeout(20):
            while not any(
                e.kind == kind and (sessions is None or e.sessions == sessions) for e in self.seen
            ):
                self.changed.clear()
                await self.changed.wait()


async def test_with_reconnect_a_session_that_is_back_goes_on_while_another_reattaches() -> None:
    async with proxied() as (proxy, url):
        runtime = ClientRuntime()
        events = Events()
        async with connect_remote(
            url, runtime, reconnect=True, resume_timeout=0, one_stream=False
        ) as conn:
            conn.transport.policy.on_event = events
            await runtime.initialize()
            quick = (await runtime.new_session("/tmp")).session_id
            slow = (await runtime.new_session("/tmp")).session_id
            assert (await runtime.prompt(quick, "one")).stop_reason == "end_turn"
            assert (await runtime.prompt(slow, "one")).stop_reason == "end_turn"
            async with gated_resume(slow):
                proxy.cut_session_streams()
                await events.wait_for("reattached", [quick])
                # `slow` is still being reattached (its resume waits for the gate): the
                # quick session's prompt goes out and is answered meanwhile.
                answer = await asyncio.wait_for(runtime.prompt(quick, "two"), 20)
                assert answer.stop_reason == "end_turn"
                assert "reconnected" not in events.kinds() and not RESUME_GATE.is_set()
            await events.wait_for("reconnected")
            assert (await runtime.prompt(slow, "two")).stop_reason == "end_turn"
        assert events.kinds() == ["lost", "reattached", "reattached", "reconnected"]
        assert [e.sessions for e in events.seen[1:3]] == [[quick], [slow]]


async def test_with_reconnect_a_prompt_sent_on_a_connection_that_broke_while_set_up_is_answered() -> (
    None
):
    """A session that is back sends a prompt on the new connection; that connection breaks
    before the other session is back: the prompt is in flight on a broken connection, so it
    is sent again after the next reattach and, since it began, answered lost (never run
    twice, never left unanswered)."""
    global RELEASE
    RELEASE = asyncio.Event()  # of this test's event loop
    seen: list[str] = []
    began = asyncio.Event()

    def on_update(_sid: str, update: object) -> None:
        if isinstance(update, ev.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            seen.append(update.content.text)
            if update.content.text == "echo: hold":
                began.set()

    async with proxied() as (proxy, url):
        runtime = ClientRuntime(on_update=on_update)
        events = Events()
        async with connect_remote(
            url, runtime, reconnect=True, resume_timeout=0, one_stream=False
        ) as conn:
            conn.transport.policy.on_event = events
            await runtime.initialize()
            quick = (await runtime.new_session("/tmp")).session_id
            slow = (await runtime.new_session("/tmp")).session_id
            assert (await runtime.prompt(slow, "one")).stop_reason == "end_turn"
            async with gated_resume(slow):
                proxy.cut_session_streams()
                await events.wait_for("reattached", [quick])
                held = asyncio.ensure_future(runtime.prompt(quick, "hold"))
                await asyncio.wait_for(began.wait(), 20)
                proxy.cut_session_streams()  # the connection being set up breaks
                with pytest.raises(RequestError) as lost:
                    await asyncio.wait_for(held, 20)
            RELEASE.set()
            assert is_connection_lost(lost.value)
            await events.wait_for("reconnected")
            assert (await runtime.prompt(quick, "after")).stop_reason == "end_turn"
            assert (await runtime.prompt(slow, "after")).stop_reason == "end_turn"
        assert seen.count("echo: hold") == 1
