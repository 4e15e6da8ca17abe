"""A live session of a `SessionAgent`: its settings, its running turn, its history.

Every `session/update` goes through `Session.send`, which hands it to the store's writer
(`_writer.py`: batched commits off the event loop) and returns; the update is written to
the wire once its batch is committed, in order, by the session's delivery task. So an
update the client saw is never missing from the history, even if the agent is killed right
after, and a turn streams without waiting for each commit. `flush()` waits until every
update sent so far is delivered: the runtime calls it before anything else goes to the
client (a request, the turn's answer), so nothing overtakes an update.

When the store fails (disk full, database down: `StoreUnavailable`), or the connection
breaks, the updates not yet delivered are dropped and the next `send` or `flush` raises
that error; `clear_failure()` lets the next turn try again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import msgspec
from msgspec import UNSET

import acpstack.events as events
from acpstack.agent._store import (
    SessionBusy,
    SessionRecord,
    SessionStore,
    StoredEvent,
    StoreUnavailable,
)
from acpstack.agent._store._records import EVENT_BATCH
from acpstack.agent._writer import Batch, StoreWriter, writer_for
from acpstack.events import v1 as events_v1
from acpstack.schema import v1 as acp
from acpstack.wire import INTERNAL_ERROR, METHOD_NOT_FOUND, RequestError

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer
    from acpstack.agent._cancel import CancelRegistry
    from acpstack.agent._mcp import McpConnections

log = logging.getLogger("acpstack.agent")

YIELD_EVERY = 256  # events queued by a session between two chances for the writer to run
UPDATE = "update"  # an update the agent sent
PROMPT = "prompt"  # a user prompt block, stored as a user_message_chunk update
# `_meta` key of a prompt's operation id (the client's name for one prompt, the same when
# it sends the prompt again after a failover), and of the mark on such a re-sent prompt
OPERATION_KEY = "acpstack/operationId"
RESENT_KEY = "acpstack/resent"
# `agentCapabilities._meta` key of an agent that honours both (`SessionAgent`)
OPERATIONS_CAPABILITY = "acpstack/operationIds"
# Delivery cursors: a client that asks for them (`_meta["acpstack/cursors"]: true` on
# `initialize`, in the agent's capabilities' `_meta` too) gets each `session/update` with
# its position in the session's history (`params._meta["acpstack/seq"]`), and after a
# failover asks `session/resume` to send what it missed (`_meta["acpstack/after"]`).
CURSORS_KEY = "acpstack/cursors"
SEQ_KEY = "acpstack/seq"
AFTER_KEY = "acpstack/after"
_SEQ_META = b',"_meta":{"' + SEQ_KEY.encode() + b'":'

_encode = msgspec.json.Encoder().encode
_Raw = msgspec.Raw
# Message chunks have the same JSON stored (an event's), on v1 and on v2 (with their id):
# sent as stored, with a type test (the hot path of a turn).
SAME_EVERYWHERE = frozenset(
    {
        events.AgentMessageChunk,
        events.AgentThoughtChunk,
        events.UserMessageChunk,
        acp.AgentMessageChunk,
        acp.AgentThoughtChunk,
        acp.UserMessageChunk,
    }
)
STORED_CHUNKS = (
    b'{"sessionUpdate":"agent_message_chunk",',
    b'{"sessionUpdate":"agent_thought_chunk",',
    b'{"sessionUpdate":"user_message_chunk",',
)
T = TypeVar("T")


@dataclass(slots=True)  # one per open session: no per-instance __dict__
class Session:
    """One active session of a `SessionAgent` (`SessionAgent.sessions` holds them by id).

    Its settings mirror the stored `SessionRecord` (`save` writes them back); `client` is
    the connection's `ClientPeer`; `mcp` the session's MCP servers (with the `mcp` option);
    `turn_task` the running prompt turn, if any; `state` is free for the author's data;
    `cancels` what a v2 client may cancel now (`tool_call/cancel`, `terminal/cancel`;
    None on v1, which has neither)."""

    session_id: str
    cwd: str
    client: ClientPeer
    store: SessionStore
    additional_directories: list[str] = field(default_factory=list)
    mcp_servers: list[Any] = field(default_factory=list)
    mode_id: str | None = None
    config_values: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    # The client's `systemPrompt` ({"mode": "append"|..., "text": ...}), for the author's
    # model: added to (or replacing) the agent's own instructions. None: not given.
    system_prompt: dict[str, str] | None = None
    mcp: McpConnections | None = None
    turn_task: asyncio.Task[Any] | None = None
    start_task: asyncio.Task[None] | None = None  # the on_session_start hook while it runs
    cancel_requested: bool = False
    cancels: CancelRegistry | None = None
    # Free for the author's own per-session data.
    state: dict[str, Any] = field(default_factory=dict)
    _writer: StoreWriter | None = field(default=None, init=False, repr=False)
    # Events waiting for their batch: (batch, index there, the update to deliver in its
    # wire form, or None), in order.
    _outbox: deque[tuple[Batch, int, bytes | None]] = field(
        default_factory=deque, init=False, repr=False
    )
    # Events queued with nothing to deliver (a prompt) while the outbox was empty: only
    # their storing is waited for (`drain`), without a delivery task.
    _unconfirmed: deque[tuple[Batch, int]] = field(default_factory=deque, init=False, repr=False)
    _delivery: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    _failure: Exception | None = field(default=None, init=False, repr=False)
    # Every frame of this session's updates opens with `_frame_head` (the notification's
    # envelope and the sessionId; b"" when the connection's frames are not newline-
    # delimited), made for the connection `_head_of` (a session can move to another one).
    _frame_head: bytes = field(default=b"", init=False, repr=False)
    _head_of: object = field(default=None, init=False, repr=False)
    # Each update goes out with its seq (`SEQ_KEY`): the client asked for cursors.
    stamp_seq: bool = field(default=False, repr=False)
    # The seq of the last event stored when this copy was opened, when the store said
    # (None: unknown): the `catch_up` that follows the opening has nothing to read after it.
    stored_seq: int | None = field(default=None, repr=False)
    # A message chunk goes to this session's connection as it is stored (no `wire_form`
    # call): true of v1; `V2Session` maps every update.
    sent_as_stored: ClassVar[bool] = True

    @property
    def roots(self) -> list[str]:
        """The session's workspace roots: cwd first, then the additional directories."""
        return [self.cwd, *self.additional_directories]

    async def send(self, update: events.Event | acp.SessionUpdate) -> None:
        """Record `update` (an event of `acpstack.events`, or a v1 update: its JSON is an
        event's) in the store, then (once stored) send it to the client in the shape of
        the connection's protocol version."""
        payload = _encode(update)
        if self.sent_as_stored and type(update) in SAME_EVERYWHERE:
            wire: bytes | None = payload
        else:
            wire = self.wire_form(payload, update)
        writer = self._writer or self._get_writer()
        if writer.inline and not self._outbox and self._failure is None:
            # The hot path of a store that never blocks (each streamed chunk of a turn).
            try:
                seq = self.store.append_event(self.session_id, UPDATE, payload)
            except (KeyError, SessionBusy, TypeError, ValueError) as exc:
                raise self._fail(exc) from None
            except Exception as exc:
                raise self._fail(StoreUnavailable(exc)) from None
            if wire is not None:
                connection = self.client.connection
                head = self._frame_head if self._head_of is connection else b""
                if head:  # `send_wire` inlined
                    end = b"%s%d}}}\n" % (_SEQ_META, seq) if self.stamp_seq else b"}}\n"
                    await connection.notify_frame(head + wire + end)
                else:
                    await self.send_wire(wire, seq)
            return
        if not writer.inline and self._failure is None and writer.pending < writer.max_pending:
            # The hot path of a store with a writer thread: queued, delivered once stored.
            outbox = self._outbox
            outbox.append((*writer.queue(self.session_id, UPDATE, payload), wire))
            if self._delivery is None:
                # Owned by the session: ended by `aclose`.
                self._delivery = asyncio.get_running_loop().create_task(self._deliver_stored())
            elif len(outbox) % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # let the writer and the delivery run (see `log`)
            return
        await self._log(UPDATE, payload, wire)

    async def log(self, kind: str, payload: bytes, *, deliver: bool = False) -> None:
        """Append one event to the session's history (through the store's writer); with
        `deliver`, `payload` (an encoded update) goes to the client once it is stored.
        Raises the failure that stopped an earlier event, if any (see `clear_failure`)."""
        await self._log(kind, payload, self.wire_form(payload) if deliver else None)

    async def _log(self, kind: str, payload: bytes, wire: bytes | None) -> None:
        writer = self._get_writer()
        if writer.pending >= writer.max_pending:
            await writer.room()
        seq = self._log_nowait(kind, payload, wire)
        if seq is not None:
            if wire is not None:
                await self.send_wire(wire, seq)
        elif (len(self._outbox) + len(self._unconfirmed)) % YIELD_EVERY == 0:
            # A turn that streams without awaiting anything else would otherwise queue
            # until the queue is full before the writer and the delivery get a turn: let
            # them commit and send what is queued while the turn goes on.
            await asyncio.sleep(0)

    def log_nowait(self, kind: str, payload: bytes, *, deliver: bool = False) -> int | None:
        """`log` without waiting for room in the writer's queue. Returns the event's seq
        when it is stored at once (a store that never blocks) and nothing waits before it:
        the caller then delivers it itself; else None (queued for the delivery task)."""
        return self._log_nowait(kind, payload, self.wire_form(payload) if deliver else None)

    def _log_nowait(self, kind: str, payload: bytes, wire: bytes | None) -> int | None:
        if self._failure is not None:
            raise self._failure
        writer = self._get_writer()
        if writer.inline:  # a store that never blocks: at once
            try:
                seq = writer.append_now(self.session_id, kind, payload)
            except (KeyError, SessionBusy, StoreUnavailable) as exc:
                raise self._fail(exc) from None
            if not self._outbox:
                return seq
            batch, index = Batch(), 0  # stored, delivered after what waits before it
            batch.finish([seq])
        else:
            batch, index = writer.queue(self.session_id, kind, payload)
            if wire is None and not self._outbox:
                self._unconfirmed.append((batch, index))
                return None
        self._outbox.append((batch, index, wire))
        if self._delivery is None:
            # Owned by the session: ended by `aclose`.
            self._delivery = asyncio.get_running_loop().create_task(self._deliver_stored())
        return None

    def _get_writer(self) -> StoreWriter:
        writer = self._writer
        if writer is None:
            writer = self._writer = writer_for(self.store)
        return writer

    def wire_form(self, payload: bytes, update: Any = None) -> bytes | None:
        """A stored event (`payload`, and `update` itself when the caller has it) as this
        session's connection sends it, or None when that version has no such update: v1's
        codec (`acpstack.events.v1`). A v1 update and a message chunk go as stored."""
        if update is None:
            if payload.startswith(STORED_CHUNKS):
                return payload
            update = events.decode_event(payload)
        elif not isinstance(update, events.EventStruct | events.UnknownEvent):
            return payload  # a v1 update: its JSON is v1's
        return events_v1.encode(update, unstable=True)

    async def deliver(self, payload: bytes, seq: int) -> None:
        """Write one stored update (`payload`, its `seq` in the history) to the client."""
        wire = self.wire_form(payload)
        if wire is not None:
            await self.send_wire(wire, seq)

    async def send_wire(self, wire: bytes, seq: int) -> None:
        """Write one update in its wire form (see `wire_form`), `seq` its position in the
        history: one frame, its envelope made once per session and connection."""
        connection = self.client.connection
        if self._head_of is connection:
            head = self._frame_head
        else:
            opening = connection.notification_head("session/update")
            params = b'{"sessionId":' + _encode(self.session_id) + b',"update":'
            head = self._frame_head = b"" if opening is None else opening + params
            self._head_of = connection
        if head:
            end = b"%s%d}}}\n" % (_SEQ_META, seq) if self.stamp_seq else b"}}\n"
            await connection.notify_frame(head + wire + end)
            return
        # Frames with a Content-Length header: the envelope is encoded each time.
        params = b'{"sessionId":' + _encode(self.session_id) + b',"update":'
        end = b"%s%d}}" % (_SEQ_META, seq) if self.stamp_seq else b"}"
        await connection.notify("session/update", _Raw(params + wire + end))

    async def _deliver_stored(self) -> None:
        outbox = self._outbox
        try:
            while outbox:
                batch, index, wire = outbox[0]
                if not batch.done:
                    await batch.wait()
                result = batch.results[index]
                if isinstance(result, Exception):
                    self._fail(result)
                    return
                if wire is not None:
                    try:
                        await self.send_wire(wire, result)
                    except Exception as exc:  # the connection broke: the turn hears of it
                        self._fail(exc)
                        return
                outbox.popleft()
        finally:
            self._delivery = None

    def _fail(self, error: Exception) -> Exception:
        """Remember why events stopped; what was not delivered yet is dropped."""
        self._outbox.clear()
        self._unconfirmed.clear()
        if isinstance(error, StoreUnavailable):
            log.warning("session %s: %s", self.session_id, error)
        self._failure = error
        return error

    async def flush(self) -> None:
        """Wait until every update sent so far is stored and delivered (raises the failure
        that stopped them, if any)."""
        await self.drain()
        if self._failure is not None:
            raise self._failure

    async def drain(self) -> None:
        """Wait until every update sent so far is delivered or dropped, and every event
        is stored or failed (never raises)."""
        while self._delivery is not None:
            await asyncio.wait([self._delivery])
        unconfirmed = self._unconfirmed
        while unconfirmed:
            entry = unconfirmed[0]
            batch, index = entry
            if not batch.done:
                await batch.wait()
            if unconfirmed and unconfirmed[0] is entry:  # (another drain may have taken it)
                unconfirmed.popleft()
                result = batch.results[index]
                if isinstance(result, Exception) and self._failure is None:
                    self._fail(result)

    def clear_failure(self) -> Exception | None:
        """Forget the failure that stopped events (the next turn tries the store again);
        returns it."""
        failure, self._failure = self._failure, None
        if self._writer is not None:
            self._writer.forgive(self.session_id)
        return failure

    async def aclose(self) -> None:
        """Stop delivering (the session ends): what was stored stays stored."""
        task = self._delivery
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        self._outbox.clear()
        self._unconfirmed.clear()

    def record_prompt(
        self,
        blocks: list[acp.ContentBlock],
        message_id: str | None = None,
        operation_id: str | None = None,
    ) -> None:
        """Record a user prompt in the history (one `user_message_chunk` per block, sharing
        `message_id`, a fresh one if None), so `session/load` replays it. `operation_id`
        (the client's, for a prompt it may send again after a failover) is kept in the
        first chunk's `_meta`, so that another process can tell the prompt began."""
        mid = message_id or new_id()
        for index, block in enumerate(blocks):
            meta = {OPERATION_KEY: operation_id} if operation_id and index == 0 else UNSET
            chunk = events.UserMessageChunk(content=block, message_id=mid, meta=meta)
            self.log_nowait(PROMPT, _encode(chunk))

    async def began(self, operation_id: str) -> bool:
        """Whether a prompt with this operation id was recorded in the session's history
        (by any process sharing the store)."""
        needle = _encode(operation_id)
        async for event in self.history():
            if event.kind == PROMPT and needle in event.payload:
                return True
        return False

    async def stored(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a call of the session's store off the event loop, after the events sent so
        far (e.g. `await session.stored(session.store.get, session.session_id)`)."""
        return await self._get_writer().call(fn, *args, **kwargs)

    async def _stored_own(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`stored` for a call about this session only: it waits for the batches holding
        this session's events, not for every other session's (on a busy server a
        reattached session's catch-up read waited for whole batches of the others)."""
        return await self._get_writer().call_about(self.session_id, fn, *args, **kwargs)

    async def history(self, after_seq: int = 0) -> AsyncIterator[StoredEvent]:
        """The session's recorded events after `after_seq`, read off the event loop in
        batches, once the events sent so far are stored."""
        await self.flush()
        while True:
            batch = await self._stored_own(_read_batch, self.store, self.session_id, after_seq)
            for event in batch:
                yield event
            if len(batch) < EVENT_BATCH:
                return
            after_seq = batch[-1].seq

    async def ask_permission(
        self, tool_call: acp.ToolCallUpdate, options: list[acp.PermissionOption]
    ) -> Any:
        """Ask the client's user about `tool_call` (`session/request_permission`); the
        outcome (`acp.SelectedPermissionOutcome`, `acp.CancelledRequestPermissionOutcome`
        or anything else, which never counts as approval; None: see `permission_answer`)."""
        params = acp.RequestPermissionRequest(
            session_id=self.session_id, tool_call=tool_call, options=options
        )
        await self.flush()  # the client has every update before it is asked
        request = self.client.session_request_permission(params)
        answer = await permission_answer(self.session_id, request)
        return None if answer is None else answer.outcome

    async def replay(self) -> int:
        """Send the whole recorded history (prompts and updates) as session/update, in order."""
        count = 0
        async for event in self.history():
            if event.kind not in (UPDATE, PROMPT):
                continue
            await self.deliver(event.payload, event.seq)
            count += 1
        return count

    async def catch_up(self, after_seq: int) -> int:
        """Send the updates recorded after `after_seq` (what a client that had everything
        up to there missed: prompts are not streamed live, so not here either), in order."""
        known, self.stored_seq = self.stored_seq, None  # true only until more is stored
        if known is not None and known <= after_seq and not self._outbox:
            return 0  # nothing was stored after it (a failover's usual case: no read)
        count = 0
        async for event in self.history(after_seq):
            if event.kind == UPDATE:
                await self.deliver(event.payload, event.seq)
                count += 1
        return count

    async def save(self) -> None:
        """Write the session's settings back to the store (`updated_at` moves)."""
        await self._stored_own(
            self.store.update,
            self.session_id,
            cwd=self.cwd,
            additional_directories=list(self.additional_directories),
            mcp_servers=list(self.mcp_servers),
            mode_id=self.mode_id,
            config_values=dict(self.config_values),
            title=self.title,
        )

    @classmethod
    def from_record(cls, record: SessionRecord, client: ClientPeer, store: SessionStore) -> Session:
        """The live session of a stored record, on `client`'s connection."""
        return cls(
            session_id=record.session_id,
            cwd=record.cwd,
            client=client,
            store=store,
            additional_directories=list(record.additional_directories),
            mcp_servers=list(record.mcp_servers),
            mode_id=record.mode_id,
            config_values=dict(record.config_values),
            title=record.title,
            system_prompt=record.meta.get("system_prompt"),
        )


def new_id() -> str:
    """A fresh random id of 32 hex digits (a message's, a turn's): straight from
    `os.urandom`, as `uuid.uuid4().hex` builds a UUID object first (4 µs against 1 here,
    and a turn makes several)."""
    return os.urandom(16).hex()


def store_unavailable(error: StoreUnavailable) -> RequestError:
    """The answer to a request that needed the store while it was down: retryable, and
    without the store's own message (which may name a host or a path)."""
    return RequestError(
        INTERNAL_ERROR,
        "The session store is unavailable; nothing acknowledged was lost, try again",
        {"reason": "store_unavailable", "retryable": True},
    )


async def permission_answer(session_id: str, request: Awaitable[T]) -> T | None:
    """The client's answer to `session/request_permission`, or None (a refusal) when it
    answered with an error: -32601 from a client without a permission handler (the base
    `Client` answers so because it never approves), or any other error or an invalid
    result. The user was not asked, so nothing is approved; the turn goes on (relaying
    the client's own error as the answer to its `session/prompt` helped nobody)."""
    try:
        return await request
    except RequestError as err:
        if err.code == METHOD_NOT_FOUND:
            log.info(
                "session %s: the client has no permission handler (-32601): a refusal", session_id
            )
        else:
            log.warning(
                "session %s: the client answered session/request_permission with an error "
                "(%s): a refusal",
                session_id,
                err,
            )
        return None


def _read_batch(store: SessionStore, session_id: str, after_seq: int) -> list[StoredEvent]:
    return list(itertools.islice(store.events(session_id, after_seq), EVENT_BATCH))
