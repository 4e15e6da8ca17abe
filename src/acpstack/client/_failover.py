"""Failover for remote connections: when the connection to the agent breaks, connect again
(through the same URL: a load balancer in front of several servers), initialize, and
reattach every open session, under the same `ClientConnection`.

`FailoverTransport` sits between the runtime and a remote transport and watches the
messages go by: the `initialize` (and `authenticate`) that worked, the sessions opened
(new, load, resume, fork) and closed, the requests in flight either way. When the remote
transport ends:

- every request of ours in flight fails at once with a JSON-RPC error, code -32603 and
  `data: {"reason": "connection_lost", "method": ...}`, but for `session/prompt`: each
  prompt carries an operation id (`_meta["acpstack/operationId"]`), and one in flight is
  sent again once its session is back, marked `_meta["acpstack/resent"]`; an agent that
  keeps its sessions in a shared store (`SessionAgent`) runs it unless a process already
  began it, and then answers it lost (`connection_lost`): a prompt never runs twice, and
  one the dead server never began is not lost;
- the agent's requests in flight (permission, files, terminals) are cancelled in the
  client (`$/cancel_request`), and their answers are dropped;
- over protocol v2, where a prompt is answered at once and its turn ends with an idle
  state update, a turn that was running fails as lost (an idle state with stop reason
  `error` and the `connection_lost` error is passed to the runtime);
- a new transport is made, `initialize` (and the login: `authenticate`, v2's
  `auth/login`) are replayed, and each session is resumed (`session/resume`, baseline on
  v2; `session/load` when a v1 agent cannot resume, its replayed history kept from the
  client, which has it), with a delivery cursor when the agent offers them (what the
  client missed is sent first). A session that another server still holds
  (`session_busy`, e.g. until the load balancer noticed the dead one) is asked for again
  until `busy_timeout`;
- what the runtime writes meanwhile waits: a session's messages (and its prompts sent
  again) go out as soon as that session is back, while the others are still being
  reattached; the rest (messages of no session) once every session is back.

The agent's requests on a new connection reach the runtime with ids of their own
(`acpstack-failover-<generation>-<id>`), so that a late answer to an old request can never
be taken for the answer to a new one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal, NamedTuple

import msgspec

from acpstack._tasks import cancel_and_wait
from acpstack.client._failover_policy import (
    SESSION_BUSY_REASON,
    Failover,
    FailoverEvent,
)
from acpstack.transports import (
    CONNECTION_LOST,
    DataCallback,
    EofCallback,
    Transport,
    peek_envelope,
)
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, INTERNAL_ERROR, FrameDecoder, RequestId

log = logging.getLogger("acpstack.client")

OPENING = frozenset({"session/new", "session/fork", "unstable_session/fork"})
LOGINS = frozenset({"authenticate", "auth/login"})  # v1's, v2's
REATTACHING = frozenset({"session/load", "session/resume"})
CLOSING = frozenset({"session/close", "session/delete"})
HELD_HIGH_WATER = 1024 * 1024
# `_meta` keys of a prompt's operation id and of the mark on a prompt sent again (the
# agent side's names: acpstack.agent._session)
OPERATION_KEY = "acpstack/operationId"
RESENT_KEY = "acpstack/resent"
OPERATIONS_CAPABILITY = "acpstack/operationIds"  # the agent honours both
OPERATION_ID = "operationId"  # in `error.data` of a prompt refused because it began
# Delivery cursors (the agent side's names: acpstack.agent._session): asked for on
# `initialize`, offered in the agent's capabilities; each update's seq in its `_meta`;
# `session/resume` after a failover asks for what came after the last one received.
CURSORS_KEY = "acpstack/cursors"
SEQ_STAMP = b',"_meta":{"acpstack/seq":'  # as the agent side writes it
AFTER_KEY = "acpstack/after"
SEQ_TAIL = 64  # the seq is the last thing in a stamped update's frame
STATE_UPDATE = b'"state_update"'  # a v2 foreground state report (running, idle, ...)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


class _Broken(Exception):
    """The new connection broke, or refused a step, while we were setting it up."""


class _Refused(Exception):
    def __init__(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(str(message or error))
        self.error = error

    @property
    def busy(self) -> bool:
        data = self.error.get("data") if isinstance(self.error, dict) else None
        return isinstance(data, dict) and data.get("reason") == SESSION_BUSY_REASON


class _Out(NamedTuple):
    """A message of the runtime's on its way out, with what decides when it may go."""

    frame: bytes
    session: str | None  # the session it is about (params.sessionId), if any
    request_id: RequestId | None  # set for a request of ours
    answer: bool  # an answer to a request of the current connection: it goes at once


TransportFactory = Callable[[], Awaitable[Transport]]
_UNKNOWN: Any = object()


class FailoverTransport:
    """A Transport over a remote one that it replaces when that one breaks (see above)."""

    def __init__(
        self,
        connect: TransportFactory,
        first: Transport,
        policy: Failover | None = None,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self._connect = connect
        self._current = first
        self.policy: Failover = policy or Failover()
        self._max = max_message_size
        self._out = FrameDecoder(max_message_size, "ndjson")
        self._in = FrameDecoder(max_message_size, "ndjson")
        self.generation: int = 0
        self._state: Literal["open", "reconnecting", "closed"] = "open"
        self._on_data: DataCallback | None = None
        self._on_eof: EofCallback | None = None
        self._paused = False
        self._reason: str | None = None
        self._ended_generation = -1  # the last generation whose transport ended (or broke)
        self._break_reason: str | None = None  # set while a batch shows the connection broke
        self._initialized: Any = None  # the params of the initialize that worked
        self._authenticated: tuple[str, Any] | None = None  # the login that worked
        self._pending: dict[RequestId, tuple[str, Any]] = {}  # ours in flight: method, params
        self._prompts: dict[RequestId, tuple[str, bytes]] = {}  # prompts in flight: session, frame
        self._resend: dict[RequestId, tuple[str, bytes]] = {}  # to send again once reattached
        self._prompts_resumable = False  # the new connection's agent honours operation ids
        self._cursors = False  # the current connection's agent stamps updates with their seq
        self._seen: dict[str, int] = {}  # open sessions -> the seq of the last update received
        self._v2 = False  # protocol v2: a prompt is answered at once, its turn ends with idle
        self._v2_turns: set[str] = set()  # v2 sessions whose turn runs (its idle not seen yet)
        self._inbound: dict[RequestId, RequestId] = {}  # the agent's in flight: ours -> theirs
        self._sessions: dict[str, dict[str, Any]] = {}  # open sessions -> how to reattach
        self._replaying: set[str] = set()  # sessions whose replayed history is not passed on
        self._private: dict[RequestId, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._held: list[_Out] = []
        self._held_size = 0
        self._back: set[str] = set()  # sessions reattached on the connection being set up
        self._released: set[RequestId] = set()  # requests of ours written to that connection
        self._ready = asyncio.Event()
        self._ready.set()
        self._task: asyncio.Task[None] | None = None
        self._goodbyes: set[asyncio.Task[None]] = set()  # broken connections being closed

    # -- the Transport interface -----------------------------------------------------

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        """Deliver what the current connection reads, across reconnections."""
        self._on_data, self._on_eof = on_data, on_eof
        self._attach(self._current)

    def pause_reading(self) -> None:
        """Stop delivering data (back-pressure), also on the next connection."""
        self._paused = True
        self._current.pause_reading()

    def resume_reading(self) -> None:
        """Deliver data again."""
        self._paused = False
        self._current.resume_reading()

    def write(self, data: bytes) -> None:
        """Send frames; while reconnecting they are held for the next connection."""
        for event in self._out.feed(data):
            out = self._outgoing(event) if isinstance(event, bytes) else None
            if out is None:
                continue
            if self._state == "open":
                self._current.write(out.frame + b"\n")
            elif self._state == "reconnecting":
                if out.answer or out.session in self._back:
                    self._write_now([out])
                else:
                    self._held.append(out)
                    self._held_size += len(out.frame)

    async def drain(self) -> None:
        """Wait until the held and written frames are below the high-water mark."""
        if self._state == "reconnecting" and self._held_size > HELD_HIGH_WATER:
            await self._ready.wait()
        if self._state == "open":
            await self._current.drain()

    def write_buffer_size(self) -> int:
        """Bytes held for the next connection plus those the current one buffers."""
        return self._held_size + self._current.write_buffer_size()

    async def settle(self) -> None:
        """Wait until the current connection has sent what was written."""
        await self._current.settle()

    def close_reason(self) -> str | None:
        """Why the transport closed (None while it is open)."""
        return self._reason or self._current.close_reason()

    async def close(self) -> None:
        """Stop reconnecting and close the current connection."""
        self._state = "closed"
        self._ready.set()
        task, self._task = self._task, None
        if task is not None:  # our reconnecting task
            await cancel_and_wait(task)
        if self._goodbyes:  # each ends within the remote transport's DELETE timeout
            await asyncio.wait(set(self._goodbyes))
        await self._current.close()

    # -- watching what goes out -----------------------------------------------------

    def _outgoing(self, frame: bytes) -> _Out | None:
        """Note what a message of the runtime's means; the message to send, or None."""
        try:
            env = peek_envelope(frame)
        except msgspec.DecodeError:
            return _Out(frame, None, None, False)
        session = env.session_id if isinstance(env.session_id, str) else None
        if env.kind == "response":
            # An answer to the agent goes only to the connection that asked, with its id.
            theirs = self._inbound.pop(env.id, _UNKNOWN)
            if theirs is _UNKNOWN:
                log.debug("dropped an answer to a request of a connection that broke")
                return None
            if theirs == env.id:
                return _Out(frame, session, None, True)
            message = _decode(frame)
            message["id"] = theirs
            return _Out(_encode(message), session, None, True)
        if env.kind != "request":
            return _Out(frame, session, None, False)
        method = env.method or ""
        params: Any = None
        if method == "session/prompt" and isinstance(env.session_id, str):
            frame = _with_operation_id(frame)
            self._prompts[env.id] = (env.session_id, frame)
        if method == "initialize":
            frame, params = _asking_for_cursors(frame)
        elif method in LOGINS or method in OPENING:
            params = _decode(frame).get("params")
        elif method in REATTACHING:
            params = _decode(frame).get("params")
            if isinstance(params, dict) and isinstance(env.session_id, str):
                self._sessions[env.session_id] = _reattach_params(params)
        elif method in CLOSING and env.session_id is not None:
            self._sessions.pop(env.session_id, None)
            self._seen.pop(env.session_id, None)
        self._pending[env.id] = (method, params)
        return _Out(frame, session, env.id, False)

    # -- what comes in -----------------------------------------------------------------

    def _attach(self, transport: Transport) -> None:
        generation = self.generation
        transport.start_reading(
            lambda data: self._incoming(generation, data), lambda: self._ended(generation)
        )
        if self._paused:
            transport.pause_reading()

    def _incoming(self, generation: int, data: bytes) -> None:
        if self._state == "closed" or generation == self._ended_generation:
            return
        if generation != self.generation:
            return
        passed: list[bytes] = []
        for frame in self._in.feed(data):
            if isinstance(frame, bytes):
                message = self._inspect(frame)
                if message is not None:
                    passed.append(message)
                if self._break_reason is not None:
                    break  # the rest of a connection that broke is not passed on
        if passed and self._on_data is not None:
            self._on_data(b"\n".join(passed) + b"\n")
        reason, self._break_reason = self._break_reason, None
        if reason is not None:
            self._broke(reason)

    def _inspect(self, frame: bytes) -> bytes | None:
        """The message to pass on to the runtime (None: it is ours, or not for it)."""
        try:
            env = peek_envelope(frame)
        except msgspec.DecodeError:
            return frame
        if env.kind == "response":
            future = self._private.pop(env.id, None)
            if future is not None:
                if not future.done():
                    future.set_result(_decode(frame))
                return None
            if CONNECTION_LOST.encode() in frame and self._transport_lost(env.id, frame):
                return None
            self._answered(env.id, env.result_session_id, frame)
            return frame
        if env.kind == "request":
            if self.generation == 0:
                self._inbound[env.id] = env.id
                return frame
            mine = f"acpstack-failover-{self.generation}-{env.id}"
            self._inbound[mine] = env.id
            message = _decode(frame)
            message["id"] = mine
            return _encode(message)
        if env.session_id in self._replaying:
            return None  # a session/load replay: the client has this history already
        if self._v2 and env.session_id is not None and STATE_UPDATE in frame:
            self._follow_v2_turn(env.session_id, frame)
        if self._cursors and env.session_id is not None and env.method == "session/update":
            stamped = _seq_of(frame)
            if stamped is not None:
                self._seen[env.session_id], frame = stamped
        return frame

    def _follow_v2_turn(self, session_id: str, frame: bytes) -> None:
        """Note whether a v2 session's turn runs (`running`, `requires_action`) or ended
        (`idle`): a prompt waits for that idle, which a dead server never sends."""
        update = (_decode(frame).get("params") or {}).get("update")
        if not isinstance(update, dict) or update.get("sessionUpdate") != "state_update":
            return
        if update.get("state") == "idle":
            self._v2_turns.discard(session_id)
        elif update.get("state") in ("running", "requires_action"):
            self._v2_turns.add(session_id)

    def _answered(self, request_id: RequestId, new_session: str | None, frame: bytes) -> None:
        self._prompts.pop(request_id, None)
        sent = self._pending.pop(request_id, None)
        if sent is None:
            return
        method, params = sent
        if method in OPENING and new_session is not None and isinstance(params, dict):
            self._sessions[new_session] = _reattach_params(params)
        elif (method == "initialize" or method in LOGINS) and "error" not in _decode(frame):
            if method == "initialize":
                self._initialized = params
                result = _decode(frame).get("result")
                self._cursors = _offers_cursors(result)
                self._v2 = isinstance(result, dict) and result.get("protocolVersion") == 2
            else:
                self._authenticated = (method, params)
        elif method in REATTACHING and "error" in _decode(frame):
            session = params.get("sessionId") if isinstance(params, dict) else None
            self._sessions.pop(str(session), None)
            self._seen.pop(str(session), None)

    def _transport_lost(self, request_id: RequestId, frame: bytes) -> bool:
        """The remote transport failed one of our requests because a stream broke: the
        connection is going, so fail over now (this request is failed with the others),
        before more requests are sent into it."""
        error = _decode(frame).get("error")
        data = error.get("data") if isinstance(error, dict) else None
        if not isinstance(data, dict) or data.get("reason") != CONNECTION_LOST:
            return False
        if OPERATION_ID in data:
            return False  # the agent's answer to a prompt sent again: it began elsewhere
        if self._state != "open" or self._initialized is None or request_id not in self._pending:
            return False
        self._break_reason = self._current.close_reason() or str(error.get("message"))
        return True

    def _ended(self, generation: int) -> None:
        if generation != self.generation or self._state == "closed":
            return
        self._ended_generation = generation
        for future in self._private.values():
            if not future.done():
                future.set_exception(_Broken(self._current.close_reason() or "it closed"))
        self._private.clear()
        if self._state == "reconnecting":
            return  # the reconnecting task sees its step fail and tries again
        if self._initialized is None:  # never got going: nothing to fail over
            self._give_up(None)
            return
        self._broke(self._current.close_reason() or "the connection closed")

    def _broke(self, reason: str) -> None:
        self._ended_generation = self.generation
        self._state = "reconnecting"
        self._ready.clear()
        lost = self._fail_in_flight(reason)
        self._report(FailoverEvent("lost", reason, lost_requests=lost))
        # Owner: this transport; `close` ends it (and waits for the goodbyes).
        self._task = asyncio.get_running_loop().create_task(self._reconnect(reason))

    def _fail_in_flight(self, reason: str, only: set[RequestId] | None = None) -> list[str]:
        """Answer every request in flight either way: ours as lost, the agent's cancelled.
        With `only`: just those of ours (the ones written to a connection that broke while
        it was being set up; the others are still held, unsent)."""
        messages = []
        lost = []
        for request_id in list(self._pending):
            if only is not None and request_id not in only:
                continue
            method, _params = self._pending.pop(request_id)
            prompt = self._prompts.pop(request_id, None)
            if prompt is not None:
                self._resend[request_id] = prompt  # sent again once its session is back
                continue
            lost.append(method)
            error = {
                "code": INTERNAL_ERROR,
                "message": f"the connection to the agent broke while {method} was in flight "
                f"({reason}); it is lost, the client is reconnecting",
                "data": {"reason": CONNECTION_LOST, "method": method},
            }
            messages.append(_encode({"jsonrpc": "2.0", "id": request_id, "error": error}))
        if only is None:  # the connection broke: the v2 turns running on it are lost
            messages += [_v2_turn_lost(sid, reason) for sid in sorted(self._v2_turns)]
            self._v2_turns.clear()
        for mine in self._inbound:
            cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": mine}}
            messages.append(_encode(cancel))
        self._inbound.clear()  # their answers are dropped: nobody is waiting for them
        self._in = FrameDecoder(self._max, "ndjson")
        if messages and self._on_data is not None:
            self._on_data(b"\n".join(messages) + b"\n")
        return lost

    # -- reconnecting -------------------------------------------------------------------

    async def _reconnect(self, reason: str) -> None:
        policy = self.policy
        delay = policy.first_delay
        for attempt in range(1, policy.attempts + 1):
            self._say_goodbye(self._current)
            if self._state == "closed":
                return
            try:
                missing = await self._attempt()
            except (_Broken, _Refused, OSError, TimeoutError) as exc:
                reason = str(exc) or type(exc).__name__
                log.info("failover attempt %d failed: %s", attempt, reason)
                # What went out on it for the sessions already back is in flight on a
                # broken connection, as at a break: lost (prompts: sent again later).
                released, self._released = self._released, set()
                self._back.clear()
                self._fail_in_flight(reason, only=released)
                await asyncio.sleep(delay)
                delay = min(delay * 2, policy.max_delay)
                continue
            self._resume_writing()
            sessions = [s for s in self._sessions if s not in missing]
            self._report(FailoverEvent("reconnected", reason, [], sessions, missing, attempt))
            return
        self._give_up(f"{policy.attempts} attempts failed; the last: {reason}")

    def _say_goodbye(self, transport: Transport) -> None:
        """Close a broken connection (a DELETE: a server still alive lets go of its
        sessions) while the next one is set up: to a dead server through a proxy that can
        take seconds. A session the old server still holds meanwhile is asked for again."""
        task = asyncio.get_running_loop().create_task(_close_quietly(transport))
        self._goodbyes.add(task)
        task.add_done_callback(self._goodbyes.discard)

    async def _attempt(self) -> dict[str, str]:
        self._back.clear()
        self._released.clear()
        transport = await self._connect()
        self.generation += 1
        self._current = transport
        self._attach(transport)
        answer = await self._ask("initialize", self._initialized)
        meta = _capabilities(answer).get("_meta")
        self._prompts_resumable = isinstance(meta, dict) and meta.get(OPERATIONS_CAPABILITY) is True
        self._cursors = _offers_cursors(answer)
        self._v2 = isinstance(answer, dict) and answer.get("protocolVersion") == 2
        if self._authenticated is not None:
            await self._ask(*self._authenticated)
        method = _reattach_method(answer)
        tasks = [
            asyncio.ensure_future(self._reattach(sid, params, method))
            for sid, params in list(self._sessions.items())
        ]
        try:
            results = await asyncio.gather(*tasks)
        finally:  # a failed attempt leaves none behind to write into the next connection
            for task in tasks:
                task.cancel()
        missing = {sid: why for sid, why in results if why is not None}
        for sid in missing:
            self._sessions.pop(sid, None)
            self._seen.pop(sid, None)
        return missing

    async def _reattach(
        self, session_id: str, params: dict[str, Any], method: str | None
    ) -> tuple[str, str | None]:
        """Resume (or load) one session; retry while another server still holds it."""
        if method is None:
            return session_id, "the agent can neither resume nor load sessions"
        resume = method == "session/resume"
        if resume and self._cursors and session_id in self._seen:
            # the new server sends what the updates received were followed by, first
            params = {**params, "_meta": {AFTER_KEY: self._seen[session_id]}}
        deadline = asyncio.get_running_loop().time() + self.policy.busy_timeout
        delay = self.policy.first_delay
        while True:
            if not resume:
                self._replaying.add(session_id)
            try:
                await self._ask(method, {**params, "sessionId": session_id})
                self._session_back(session_id)
                return session_id, None
            except _Refused as exc:
                if not exc.busy or asyncio.get_running_loop().time() + delay > deadline:
                    return session_id, str(exc)
            finally:
                self._replaying.discard(session_id)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.policy.max_delay)

    async def _ask(self, method: str, params: Any) -> Any:
        """A request of our own on the new connection; its result, or _Refused/_Broken."""
        if self._state == "closed":
            raise asyncio.CancelledError
        if self._ended_generation == self.generation:
            raise _Broken(self._current.close_reason() or "the new connection closed")
        request_id = f"acpstack-failover-{self.generation}-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._private[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._current.write(_encode(message) + b"\n")
        try:
            async with asyncio.timeout(self.policy.request_timeout):
                answer = await future
        finally:
            self._private.pop(request_id, None)
        if "error" in answer:
            raise _Refused(answer["error"])
        return answer.get("result")

    def _session_back(self, session_id: str) -> None:
        """One session is reattached: its prompts in flight at the break (sent again) and
        what the runtime wrote for it meanwhile go out now, and what it writes next."""
        self._back.add(session_id)
        again = [_Out(f, session_id, rid, False) for rid, f in self._prompts_again(session_id)]
        mine = [out for out in self._held if out.session == session_id]
        if mine:
            self._held = [out for out in self._held if out.session != session_id]
            self._held_size -= sum(len(out.frame) for out in mine)
        self._write_now([*again, *mine])
        self._report(FailoverEvent("reattached", "", sessions=[session_id]))

    def _write_now(self, outs: list[_Out]) -> None:
        """Write to the connection being set up (its sessions' messages, answers to it)."""
        if not outs:
            return
        self._released.update(o.request_id for o in outs if o.request_id is not None)
        self._current.write(b"".join(out.frame + b"\n" for out in outs))

    def _resume_writing(self) -> None:
        held, self._held, self._held_size = self._held, [], 0
        self._state = "open"
        self._back.clear()
        self._released.clear()
        self._ready.set()
        again = [frame for _rid, frame in self._prompts_again()]
        if again or held:
            frames = [*again, *(out.frame for out in held)]
            self._current.write(b"".join(frame + b"\n" for frame in frames))

    def _fail_held_prompts(self, reason: str) -> None:
        """The prompts held to be sent again fail as lost: there is no connection for them."""
        resend, self._resend = self._resend, {}
        messages = [
            _encode({"jsonrpc": "2.0", "id": request_id, "error": _lost_error(reason)})
            for request_id in resend
        ]
        if messages and self._on_data is not None:
            self._on_data(b"\n".join(messages) + b"\n")

    def _prompts_again(self, session: str | None = None) -> list[tuple[RequestId, bytes]]:
        """The prompts that were in flight (of `session`, or all), marked as sent again,
        for the sessions that are back; those of sessions that are not fail as lost."""
        if session is None:
            resend, self._resend = self._resend, {}
        else:
            resend = {rid: p for rid, p in self._resend.items() if p[0] == session}
            for rid in resend:
                del self._resend[rid]
        frames, lost = [], []
        for request_id, (session_id, frame) in resend.items():
            if session_id not in self._sessions or not self._prompts_resumable:
                error = {
                    "code": INTERNAL_ERROR,
                    "message": "the connection to the agent broke while session/prompt was in "
                    "flight; it is lost (its session could not be reattached, or the agent "
                    "cannot tell whether it began)",
                    "data": {"reason": CONNECTION_LOST, "method": "session/prompt"},
                }
                lost.append(_encode({"jsonrpc": "2.0", "id": request_id, "error": error}))
                continue
            again = _marked_resent(frame)
            self._pending[request_id] = ("session/prompt", None)
            self._prompts[request_id] = (session_id, again)
            frames.append((request_id, again))
        if lost and self._on_data is not None:
            self._on_data(b"\n".join(lost) + b"\n")
        return frames

    def _give_up(self, reason: str | None) -> None:
        self._fail_held_prompts(reason or "the connection closed")
        self._state = "closed"
        self._ready.set()
        self._held, self._held_size = [], 0
        if reason is not None:
            self._reason = reason
            self._report(FailoverEvent("failed", reason))
        if self._on_eof is not None:
            self._on_eof()

    def _report(self, event: FailoverEvent) -> None:
        log.info("failover: %s", event)
        if self.policy.on_event is not None:
            try:
                self.policy.on_event(event)
            except Exception:
                log.exception("the failover on_event callback failed")


async def _close_quietly(transport: Transport) -> None:
    try:
        await transport.close()
    except Exception as exc:  # it is broken already: nothing more to do about it
        log.debug("closing a broken connection failed: %s", exc)


def _v2_turn_lost(session_id: str, reason: str) -> bytes:
    """The end of a v2 turn that was running where the connection broke: an idle state
    with stop reason `error`, the error saying the turn is lost (its outcome unknown)."""
    error = {
        "code": INTERNAL_ERROR,
        "message": f"the connection to the agent broke while a turn was running ({reason}); "
        "its outcome is unknown, the client is reconnecting",
        "data": {"reason": CONNECTION_LOST, "method": "session/prompt"},
    }
    update = {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "error",
        "error": error,
    }
    params = {"sessionId": session_id, "update": update}
    return _encode({"jsonrpc": "2.0", "method": "session/update", "params": params})


def _lost_error(reason: str) -> dict[str, Any]:
    return {
        "code": INTERNAL_ERROR,
        "message": f"the connection to the agent broke while session/prompt was in flight "
        f"({reason}); it is lost",
        "data": {"reason": CONNECTION_LOST, "method": "session/prompt"},
    }


def _with_operation_id(frame: bytes) -> bytes:
    """The prompt with an operation id of its own in `params._meta` (kept if it has one)."""
    message = _decode(frame)
    params = message.get("params")
    if not isinstance(params, dict):
        return frame
    meta = params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if isinstance(meta.get(OPERATION_KEY), str):
        return frame
    meta[OPERATION_KEY] = uuid.uuid4().hex
    params["_meta"] = meta
    return _encode(message)


def _asking_for_cursors(frame: bytes) -> tuple[bytes, Any]:
    """The initialize request asking for delivery cursors (`_meta`), and its params."""
    message = _decode(frame)
    params = message.get("params")
    if not isinstance(params, dict):
        return frame, params
    meta = params.get("_meta")
    params["_meta"] = {**(meta if isinstance(meta, dict) else {}), CURSORS_KEY: True}
    return _encode(message), params


def _capabilities(result: Any) -> dict[str, Any]:
    """The agent's capabilities in an initialize answer (v1's `agentCapabilities`, v2's
    `capabilities`), or {}."""
    if not isinstance(result, dict):
        return {}
    caps = result.get("capabilities" if result.get("protocolVersion") == 2 else "agentCapabilities")
    return caps if isinstance(caps, dict) else {}


def _reattach_method(result: Any) -> str | None:
    """How the new connection's agent takes a session back: `session/resume` (v1 when it
    advertises it; always on v2, where it is baseline, without replaying), `session/load`
    (v1 without resume), or None."""
    if isinstance(result, dict) and result.get("protocolVersion") == 2:
        return "session/resume"
    caps = _capabilities(result)
    if isinstance((caps.get("sessionCapabilities") or {}).get("resume"), dict):
        return "session/resume"
    return "session/load" if caps.get("loadSession") is True else None


def _offers_cursors(result: Any) -> bool:
    meta = _capabilities(result).get("_meta")
    return isinstance(meta, dict) and meta.get(CURSORS_KEY) is True


def _seq_of(frame: bytes) -> tuple[int, bytes] | None:
    """The seq a stamped `session/update` carries (its params' `_meta`, the last thing in
    it), and the frame without that `_meta` (the cursor is the transport's business, and
    the runtime decodes less); None when the frame has no stamp."""
    at = frame.rfind(SEQ_STAMP, len(frame) - SEQ_TAIL)
    if at < 0:
        return None
    digits_at = at + len(SEQ_STAMP)
    end = frame.find(b"}", digits_at)
    digits = frame[digits_at:end]
    if end < 0 or not digits.isdigit():
        return None
    return int(digits), frame[:at] + frame[end + 1 :]


def _marked_resent(frame: bytes) -> bytes:
    message = _decode(frame)
    message["params"]["_meta"][RESENT_KEY] = True
    return _encode(message)


def _reattach_params(params: dict[str, Any]) -> dict[str, Any]:
    """What session/resume (or load) needs again: the roots and the MCP servers."""
    kept = {"cwd": params.get("cwd"), "mcpServers": params.get("mcpServers") or []}
    if params.get("additionalDirectories"):
        kept["additionalDirectories"] = params["additionalDirectories"]
    return kept
