"""One remote ACP connection: its agent, its outbound streams, and the routing between them.

Where the agent's messages go (streamable HTTP; a WebSocket gets everything in order):
- a request or notification with `params.sessionId` -> that session's stream (held until
  the client opens it); without one -> the connection stream;
- a response -> where its request came from: the connection stream for requests outside
  a session (initialize's answer is the POST's own body), the session's stream for the
  session's requests. `session/load`, `session/resume` and `session/fork` answer on the
  session's stream only when the client already has it open (clients that follow the
  TypeScript SDK open it first; the Python SDK's only after the answer), else on the
  connection stream, so neither kind of client waits forever.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import msgspec

from acpstack.server._agents import AgentLink, AgentSource, start_agent
from acpstack.server._attach import SHARING_METHODS, Sharing
from acpstack.server._limits import ServerLimits
from acpstack.server._metrics import ServerStats
from acpstack.server._streams import OutboundStream
from acpstack.transports import Envelope, Transport, peek_envelope
from acpstack.wire import FrameDecoder, RequestId

log = logging.getLogger("acpstack.server")

OPENING_METHODS = frozenset(
    {"session/new", "session/load", "session/resume", "session/fork", "unstable_session/fork"}
)
REATTACH_METHODS = frozenset(
    {"session/load", "session/resume", "session/fork", "unstable_session/fork"}
)
# how many ids of the client's messages are remembered to recognise one sent again
REMEMBERED_IDS = 4096
# a frame for the agent shorter than this goes with its newline in one write (one copy of a
# small message costs less than a second write)
SMALL_FRAME = 64 * 1024
# How our encoder starts a session update (after the LF that ends the frame before it).
UPDATE_START = b'\n{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
MAX_BATCH_READ = 64 * 1024 * 1024  # (the frame decoder's least limit: no line is over it)


class InitializeFailed(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class RemoteConnection:
    def __init__(
        self,
        connection_id: str,
        limits: ServerLimits,
        *,
        multiplex: bool,
        on_closed: Callable[[RemoteConnection], None],
        on_turn_end: Callable[[], None] = lambda: None,
        on_reattach: Callable[[RemoteConnection, str], Awaitable[None]] | None = None,
        principal: str | None = None,
        stats: ServerStats | None = None,
    ) -> None:
        self.id = connection_id
        self.stats: ServerStats = stats if stats is not None else ServerStats()
        # sessions opened here (for the metrics), and the requests that may open one
        self.session_ids: set[str] = set()
        self._opening: dict[RequestId, str | None] = {}
        self.principal = principal  # whose token opened it (None: no tokens)
        self.limits = limits
        self.multiplex = multiplex  # WebSocket: one stream carries everything
        self.link: AgentLink | None = None
        self.connection_stream: OutboundStream = OutboundStream(
            None, self._sized, limits.replay_bytes
        )
        self.sessions: dict[str, OutboundStream] = {}
        self._routes: dict[RequestId, tuple[str | None, bool]] = {}
        self._decoder = FrameDecoder(max(limits.max_message_size, 64 * 1024 * 1024), "ndjson")
        self._initialize: tuple[RequestId, asyncio.Future[bytes]] | None = None
        self.buffered: int = 0
        self.paused_since: float | None = None
        self.last_active: float = time.monotonic()
        # whether any message named a session: one that never did is reaped sooner
        self.opened_session: bool = False
        # the ids of `session/prompt` requests not answered yet (a drain waits for them)
        self.turns: set[RequestId] = set()
        self._turn_sessions: dict[RequestId, str | None] = {}  # the session of each turn
        self._turn_ended = asyncio.Event()
        self._routed: list[OutboundStream] = []  # streams pushed to in this `_on_data`
        self._on_turn_end = on_turn_end
        self._on_reattach = on_reattach
        self.closed: bool = False
        self.done: asyncio.Event = asyncio.Event()
        self._on_closed = on_closed
        self._closer: asyncio.Task[None] | None = None
        # the ids of the client's requests and answers that arrived, to recognise one
        # sent again after a broken connection (it cannot know whether the first arrived)
        self._seen: OrderedDict[tuple[str, RequestId], None] = OrderedDict()
        # WebSocket: how many text messages the client sent us (its resume cursor), and
        # the task reading the current socket
        self.received: int = 0
        self.reader: asyncio.Task[tuple[int, bool]] | None = None
        # other clients attached to our sessions, and sessions of others we attach to
        self.sharing: Sharing = Sharing(self)
        # the connections whose sessions a client here may attach to (the app sets it)
        self.peers: Callable[[], Iterable[RemoteConnection]] = lambda: ()

    async def start(
        self,
        source: AgentSource,
        *,
        unstable: bool,
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None,
    ) -> None:
        self.link = await start_agent(
            source,
            label=self.id[:8],
            unstable=unstable,
            max_message_size=self.limits.max_message_size,
            cwd=cwd,
            env=env,
            principal=self.principal,
        )
        self.attach_agent(self.link)

    def attach_agent(self, link: AgentLink) -> None:
        """Take `link` as the connection's agent (already started) and start reading it;
        `start` does this, and so does a server that starts its agents its own way."""
        self.link = link
        log.info("connection %s: agent started (%s)", self.id, link.description)
        link.transport.start_reading(self._on_data, self._on_eof)

    def touch(self) -> None:
        self.last_active = time.monotonic()

    @property
    def has_receiver(self) -> bool:
        return self.connection_stream.attached or any(s.attached for s in self.sessions.values())

    # -- from the agent ------------------------------------------------------------------

    def _on_data(self, data: bytes) -> None:
        # what one read from the agent held is routed whole before any receiver is woken,
        # so each receiver sends it at once, in one write
        routed = self._routed
        decoder = self._decoder
        try:
            if decoder.whole_line(data) and data[-2] != 13 and not data.isspace():
                self._route(data[:-1])  # the usual read: one message line (nothing to split)
                return
            if self._updates_read(data):
                return
            frames = decoder.feed(data)
            if self._updates_only(frames):
                return
            for frame in frames:
                if isinstance(frame, bytes):
                    self._route(frame)
                else:
                    log.warning("connection %s: the agent sent a bad frame: %r", self.id, frame)
        finally:
            if routed:
                streams = list(dict.fromkeys(routed)) if len(routed) > 1 else routed[:]
                routed.clear()
                for stream in streams:
                    stream.wake_now()

    @property
    def _batching(self) -> bool:
        """Whether a read of updates may go onto the stream at once (`_updates_read`):
        every message goes on the connection's one stream, and no other connection
        shares a session."""
        return self.multiplex and not (self.sharing.shares or self.sharing.forwarded)

    def _updates_read(self, data: bytes) -> bool:
        """A busy stream's read, at once: whole lines, nothing held before them, each a
        `session/update` notification as our encoder starts one, with no `id` key. They
        are pushed together, checked and split in C, with no envelope read per line.
        False (nothing done) for any other read."""
        if (
            not data.startswith(UPDATE_START[1:])
            or not data.endswith(b"\n")
            or b"\r" in data
            or len(data) > MAX_BATCH_READ
            or self._decoder.buffered
            or not self._batching
        ):
            return False
        # (a line holds no LF, so the count is of lines that start so)
        if data.count(UPDATE_START) != data.count(b"\n") - 1:
            return False
        return self._push_updates(data, data[:-1].split(b"\n"))

    def _updates_only(self, frames: list[Any]) -> bool:
        """`_updates_read` for the frames a read completed (one began in an earlier read)."""
        if len(frames) < 2 or not self._batching:
            return False
        try:
            joined = b"\n" + b"\n".join(frames)
        except TypeError:  # a bad frame among them: the whole way, which reports it
            return False
        if joined.count(UPDATE_START) != len(frames):
            return False
        return self._push_updates(joined, frames)

    def _push_updates(self, text: bytes, frames: list[bytes]) -> bool:
        # Inside a JSON string a quote is escaped, and without `\u` escapes a key `id` can
        # only be spelled `"id"`: without either, none is a request or a response.
        if b'"id"' in text or b"\\u" in text:
            return False
        self.opened_session = True
        self.stats.updates_sent += len(frames)
        stream = self.connection_stream
        stream.push_many(frames)
        if not self._routed or self._routed[-1] is not stream:
            self._routed.append(stream)
        return True

    def _on_eof(self) -> None:
        log.info("connection %s: the agent closed its output", self.id)
        self.close_soon()

    def _route(self, frame: bytes) -> None:
        try:
            env = peek_envelope(frame)
        except msgspec.DecodeError:
            log.warning("connection %s: the agent sent something that is not JSON", self.id)
            return
        if env.session_id is not None or env.result_session_id is not None:
            self.opened_session = True
        turn = env.kind == "response" and env.id in self.turns
        self.stats.agent_said(env, turn)
        if turn:
            self.turns.discard(env.id)
            self._turn_sessions.pop(env.id, None)
            self._turn_ended.set()
            self._on_turn_end()
        if env.kind == "response" and env.id in self._opening:
            asked = self._opening.pop(env.id)
            opened = env.result_session_id or asked
            if opened is not None and env.error is None:
                self.session_ids.add(opened)
                self.stats.sessions_opened += 1
        sharing = self.sharing
        if (sharing.shares or sharing.forwarded) and sharing.from_agent(frame, env):
            self._routes.pop(env.id, None)
            return  # the answer to a controller attached from another connection
        pending = self._initialize
        if pending is not None and env.kind == "response" and env.id == pending[0]:
            self._initialize = None
            if not pending[1].done():
                pending[1].set_result(frame)
            return
        stream = self._stream_for(env)
        stream.push(frame, wake=False)
        routed = self._routed
        if not routed or routed[-1] is not stream:
            routed.append(stream)

    def _stream_for(self, env: Envelope) -> OutboundStream:
        if self.multiplex:
            return self.connection_stream
        if env.kind == "response":
            session, reattach = self._routes.pop(env.id, (None, False))
            if session is None:
                return self.connection_stream
            stream = self.sessions.get(session)
            if reattach:
                return stream if stream is not None and stream.attached else self.connection_stream
            return stream or self.session_stream(session) or self.connection_stream
        if env.session_id is not None:
            return self.session_stream(env.session_id) or self.connection_stream
        return self.connection_stream

    def session_stream(self, session_id: str) -> OutboundStream | None:
        """The session's stream, made on first use; None when the connection has too many."""
        stream = self.sessions.get(session_id)
        if stream is None:
            if len(self.sessions) >= self.limits.max_session_streams:
                return None
            stream = self.sessions[session_id] = OutboundStream(
                session_id, self._sized, self.limits.replay_bytes
            )
        return stream

    def stream_to_client(self, session_id: str | None) -> OutboundStream:
        """Where a message for our client about `session_id` goes."""
        if self.multiplex or session_id is None:
            return self.connection_stream
        return self.session_stream(session_id) or self.connection_stream

    def release(self, stream: OutboundStream, receiver: int) -> None:
        """A receiver left the stream. A session stream nothing ever went through is
        forgotten (made anew when needed); one that was used is kept for a resume."""
        stream.detach(receiver)
        self.touch()
        if (
            stream.session_id is not None
            and not stream.attached
            and not stream.used
            and self.sessions.get(stream.session_id) is stream
        ):
            del self.sessions[stream.session_id]

    def _sized(self, delta: int) -> None:
        self.buffered += delta
        link = self.link
        if link is None:
            return
        if self.paused_since is None and self.buffered > self.limits.max_buffered_bytes:
            self.paused_since = time.monotonic()
            link.transport.pause_reading()
        elif self.paused_since is not None and self.buffered <= self.limits.max_buffered_bytes // 2:
            self.paused_since = None
            link.transport.resume_reading()

    # -- to the agent --------------------------------------------------------------------

    async def initialize(self, frame: bytes, request_id: RequestId) -> bytes:
        """Send initialize and wait for the agent's answer (raises InitializeFailed)."""
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._initialize = (request_id, future)
        await self.send(frame)
        try:
            return await asyncio.wait_for(future, self.limits.initialize_timeout)
        except TimeoutError:
            raise InitializeFailed(
                504,
                f"the agent did not answer initialize within {self.limits.initialize_timeout:g} s",
            ) from None

    async def deliver(
        self, frame: bytes, env: Envelope, header_session: str | None, *, retry: bool = False
    ) -> None:
        """Pass a client message on to the agent, remembering where its answer goes.
        `retry`: the client sent it again after a broken connection; one that arrived
        before (a request or an answer with the same id) is dropped, so it acts once."""
        if not self._remember(env, retry):
            log.info("connection %s: dropped a %s sent again", self.id, env.kind)
            return
        sharing = self.sharing
        if (sharing.active or env.method in SHARING_METHODS) and await sharing.handle(
            frame, env, (c for c in self.peers() if c is not self and c.principal == self.principal)
        ):
            return
        self._note(env, header_session)
        if (
            env.kind == "request"
            and env.method in ("session/load", "session/resume")
            and env.session_id is not None
            and self._on_reattach is not None
        ):
            await self._on_reattach(self, env.session_id)
        await self.send(frame)

    def deliver_now(self, frame: bytes, env: Envelope) -> bool:
        """`deliver` for a usual message of a multiplexed connection, done without waiting:
        False (and nothing done) when the message needs `deliver` (sharing, a reattach, an
        agent that has not taken what it got)."""
        link = self.link
        if (
            self.closed
            or link is None
            or self.sharing.active
            or env.method in SHARING_METHODS
            or env.method in REATTACH_METHODS
            or link.transport.write_buffer_size() != 0
        ):
            return False
        self._remember(env, retry=False)
        self._note(env, None)
        self.touch()
        self._write(link.transport, frame)
        return True

    def _remember(self, env: Envelope, retry: bool) -> bool:
        """Note a request's or an answer's id; False for one sent again (`retry`) that
        arrived before."""
        if env.kind in ("request", "response") and env.id is not None:
            key = (env.kind, env.id)
            if key in self._seen:
                return not retry
            self._seen[key] = None
            if len(self._seen) > REMEMBERED_IDS:
                self._seen.popitem(last=False)
        return True

    def _note(self, env: Envelope, header_session: str | None) -> None:
        """The bookkeeping of a message going to the agent (done before it goes: the
        answer may come back within the write)."""
        if env.session_id is not None:
            self.opened_session = True
        if env.kind != "request":
            return
        if env.method == "session/prompt":
            self.turns.add(env.id)
            self._turn_sessions[env.id] = env.session_id or header_session
        elif env.method in OPENING_METHODS:
            self._opening[env.id] = env.session_id
        elif env.method == "session/close" and env.session_id:
            self.session_ids.discard(env.session_id)
        if not self.multiplex:
            self._routes[env.id] = (
                env.session_id or header_session,
                env.method in REATTACH_METHODS,
            )

    async def send(self, frame: bytes) -> None:
        self.touch()
        if self.closed or self.link is None:
            raise ConnectionResetError("the connection is closed")
        transport = self.link.transport
        self._write(transport, frame)
        await transport.drain()

    @staticmethod
    def _write(transport: Transport, frame: bytes) -> None:
        if len(frame) < SMALL_FRAME:
            transport.write(frame + b"\n")
        else:  # two writes: no second copy of a large message
            transport.write(frame)
            transport.write(b"\n")

    async def turns_end(self, session_id: str, timeout: float) -> bool:
        """Wait (up to `timeout`) until no turn of `session_id` runs here; False when
        one still does."""
        try:
            async with asyncio.timeout(timeout):
                while session_id in self._turn_sessions.values() and not self.closed:
                    self._turn_ended.clear()
                    await self._turn_ended.wait()
        except TimeoutError:
            return False
        return True

    # -- closing -------------------------------------------------------------------------

    def close_soon(self) -> None:
        if self._closer is None and not self.closed:
            # Owner: this connection; the task is its own aclose and ends with it.
            self._closer = asyncio.get_running_loop().create_task(self.aclose())

    async def aclose(self) -> None:
        if self.closed:
            await self.done.wait()
            return
        self.closed = True
        self.sharing.closed()
        self.turns.clear()
        self._turn_sessions.clear()
        self._turn_ended.set()
        self.connection_stream.close()
        for stream in self.sessions.values():
            stream.close()
        if self._initialize is not None and not self._initialize[1].done():
            self._initialize[1].set_exception(
                InitializeFailed(502, "the agent closed before it answered initialize")
            )
        try:
            if self.link is not None:
                await self.link.aclose()
        finally:
            log.info("connection %s: closed", self.id)
            self.done.set()
            self._on_closed(self)
