"""The asyncio runtime: drives a ProtocolState over a Transport.

- The transport pushes bytes straight into the protocol state from the event loop (no
  reader task to wake per message).
- Both sides send requests concurrently; each inbound request runs in its own task
  (started eagerly on Python 3.12+, so a handler that answers at once never waits for
  a loop turn), at most `max_inbound_requests` at once; more wait in line, and reading pauses only
  when more than `max_waiting_requests` wait (backpressure without deadlocking on
  handlers that await the peer's responses).
- Notifications are handled in order per session (one worker per busy session); a
  response is delivered, and a request starts, only after the notifications of its
  session that the peer sent before it.
- Frames are written in the order they are produced: the first one after a read at once,
  the ones that follow it coalesced into one write per event-loop turn.
- When the transport closes, every pending call fails at once with ConnectionClosed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from acpstack._tasks import cancel_and_wait
from acpstack.rpc import _tracing
from acpstack.rpc._dispatcher import ConnectionClosed, Dispatcher, RequestTimeout
from acpstack.rpc._generated_requests import TypedRequests
from acpstack.rpc._writer import Writer
from acpstack.transports import Transport
from acpstack.wire import (
    HANDSHAKE_METHODS,
    DroppedMessage,
    Event,
    IncomingCancel,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    InvalidResult,
    ProtocolState,
    RequestError,
    checked_result,
)

if sys.version_info >= (3, 12):  # the standard library's eager start (docs/performance.md)
    from asyncio import eager_task_factory
else:  # the same on 3.11, where asyncio has none
    from acpstack.rpc._eager import EagerStarter

log = logging.getLogger("acpstack.rpc")

QUEUE_HIGH_WATER = 4096


class Connection(TypedRequests):
    """One live ACP connection. Use as an async context manager, or call start()/aclose().

    Made in a running event loop, not thread-safe; it owns `transport` and every task it
    starts (the module doc lists its guarantees). At most `max_inbound_requests` of the
    peer's requests run at once; reading pauses when more than `max_waiting_requests`
    wait. `on_close` is awaited at the end of `aclose`."""

    def __init__(
        self,
        transport: Transport,
        state: ProtocolState,
        dispatcher: Dispatcher,
        *,
        max_inbound_requests: int = 512,
        max_waiting_requests: int = 8192,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.transport: Transport = transport
        """The pipe to the peer; the connection owns it (`aclose` closes it)."""
        self.state: ProtocolState = state
        """The sans-IO protocol state: negotiated version, capabilities, pending calls."""
        self.dispatcher: Dispatcher = dispatcher
        """Where the peer's requests and notifications go (the agent or client runtime)."""
        self._max_running = max_inbound_requests
        self._running = 0
        # Requests beyond the running limit wait in line; past this many, reading pauses.
        self._max_waiting = max_waiting_requests
        self._backlog: deque[IncomingRequest] = deque()
        self._launching = False
        self._futures: dict[Any, asyncio.Future[Any]] = {}
        self._inbound: dict[Any, asyncio.Task[None]] = {}
        self._peer_cancelled: set[Any] = set()
        self._queues: dict[Any, deque[Any]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._queued = 0
        self._held: set[Any] = set()  # ids of requests waiting in a session's queue
        self._unstarted: set[Any] = set()  # ids of requests whose task has not run yet
        self._reading_paused = False
        self._started = False
        self._input_done = False
        self._finisher: asyncio.Task[None] | None = None
        self._closed: ConnectionClosed | None = None
        self._closed_event = asyncio.Event()
        self._on_close = on_close
        self._loop = asyncio.get_running_loop()
        self._writer = Writer(transport, self._loop)
        self._send = self._writer.send  # frames go out in order, coalesced (see Writer)
        # What each kind of event the state returns is handed to.
        self._handlers: dict[type, Callable[[Any], None]] = {
            IncomingNotification: self._on_notification,
            IncomingResponse: self._on_response,
            IncomingRequest: self._on_request,
            IncomingCancel: self._on_cancel,
            DroppedMessage: self._report_dropped,
        }
        self._eager = EagerStarter(self._loop) if sys.version_info < (3, 12) else None

    # -- lifecycle -------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def start(self) -> None:
        """Start reading from the transport. Idempotent."""
        if not self._started:
            self._started = True
            self.transport.start_reading(self._data_received, self._eof_received)

    @property
    def unstable(self) -> bool:
        """Whether this connection speaks ACP's unstable methods too."""
        return self.state.unstable

    @property
    def protocol_version(self) -> int | None:
        """The ACP protocol version `initialize` chose for this connection (None before)."""
        return self.state.version

    @property
    def protocol_versions(self) -> tuple[int, ...]:
        """The ACP protocol versions this side of the connection speaks."""
        return self.state.versions

    @property
    def peer_capabilities(self) -> Any:
        """What the peer advertised in `initialize` (None before)."""
        return self.state.peer_capabilities

    @property
    def local_capabilities(self) -> Any:
        """What this side advertised in `initialize` (None before)."""
        return self.state.local_capabilities

    @property
    def closed(self) -> bool:
        """Whether the connection ended (peer left, or `aclose`): calls now fail."""
        return self._closed is not None

    async def wait_closed(self) -> None:
        """Wait until the connection ended (no timeout: e.g. until the peer leaves)."""
        await self._closed_event.wait()

    async def aclose(self) -> None:
        """Close the transport, cancel our handlers, fail pending calls. Idempotent."""
        self._writer.flush()
        self._input_done = True
        self._shutdown(ConnectionClosed("connection closed locally"))
        await self.transport.close()
        tasks = [
            t for t in (self._finisher, *self._inbound.values(), *self._workers) if t is not None
        ]
        if self._eager is not None:
            tasks += self._eager.close()
        if tasks:  # ours: the finisher, the handlers and the workers of this connection
            await cancel_and_wait(*tasks)
        if self._on_close is not None:
            callback, self._on_close = self._on_close, None
            await callback()

    def _shutdown(self, exc: ConnectionClosed) -> None:
        if self._closed is not None:
            return
        self._closed = exc
        self._backlog.clear()
        self.state.fail_all_pending()
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(exc)
        self._futures.clear()
        self._closed_event.set()

    # -- reading -----------------------------------------------------------------
    # The transport calls these straight from the event loop when bytes arrive.

    def _data_received(self, data: bytes) -> None:
        if self._input_done:
            return
        self._writer.at_once = True
        try:
            event = self.state.receive_one(data)  # the common chunk, one message
            if event is None:
                self._take_in(self.state.receive(data))
            else:
                self._handlers[type(event)](event)
        except Exception:
            log.exception("reading failed")
            self._end_input()
            return
        if not self._reading_paused and (
            self._queued > QUEUE_HIGH_WATER or len(self._backlog) > self._max_waiting
        ):
            # Too much waiting to be handled: stop reading until it drains. (Reading never
            # stops merely because handlers are busy: they may be waiting for responses
            # that only the reader can see.)
            self._reading_paused = True
            self.transport.pause_reading()

    def _eof_received(self) -> None:
        if self._input_done:
            return
        try:
            self._take_in(self.state.receive_eof())
        except Exception:
            log.exception("reading failed")
        self._end_input()

    def _take_in(self, events: list[Event]) -> None:
        handlers = self._handlers
        for event in events:
            handlers[type(event)](event)
        reply = self.state.take_outgoing()  # errors the state answered by itself
        if reply:
            self._send(reply)

    def _end_input(self) -> None:
        self._input_done = True
        # Owner: this connection (as its workers and request tasks): aclose ends them.
        self._finisher = self._loop.create_task(self._finish_input())

    async def _finish_input(self) -> None:
        self._writer.flush()
        # Let queued notifications run before pending calls fail, so nothing is lost.
        await self._drain_queues()
        if self._closed is None:
            await self._finish_requests()
            await self.transport.settle()
            reason = self.transport.close_reason()
            self._shutdown(ConnectionClosed(reason or "connection closed by peer"))

    async def _finish_requests(self) -> None:
        """The peer sends nothing more, but what it asked still gets its answer: handlers
        still running get up to 5 s (e.g. one waiting on a store), while our own calls to
        the peer fail at once (it can no longer answer them)."""
        running = [task for task in self._inbound.values() if not task.done()]
        if not running:
            return
        gone = ConnectionClosed("connection closed by peer")
        self.state.fail_all_pending()
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(gone)
        self._futures.clear()
        await asyncio.wait(running, timeout=5)
        self._writer.flush()

    def _maybe_resume_reading(self) -> None:
        if self._queued <= QUEUE_HIGH_WATER // 2 and len(self._backlog) <= self._max_waiting // 2:
            self._reading_paused = False
            if not self._input_done:
                self.transport.resume_reading()

    async def _drain_queues(self) -> None:
        workers = [w for w in self._workers if not w.done()]
        if workers:
            with contextlib.suppress(Exception):
                await asyncio.wait(workers, timeout=5)

    def _on_notification(self, event: IncomingNotification) -> None:
        self._enqueue(getattr(event.params, "session_id", None), event)

    def _on_response(self, event: IncomingResponse) -> None:
        queue = self._queues.get(event.call.session_id)
        if queue:
            queue.append(event)  # delivered after the notifications before it
            self._queued += 1
        else:
            self._resolve(event)

    def _on_request(self, event: IncomingRequest) -> None:
        queue = self._queues.get(getattr(event.params, "session_id", None))
        if queue:
            queue.append(event)  # started after the notifications before it
            self._queued += 1
            self._held.add(event.id)
        elif self._running < self._max_running and self._closed is None:
            self._launch(event)
        else:
            self._start_request(event)

    def _on_cancel(self, event: IncomingCancel) -> None:
        self._peer_cancels(event.request_id)

    def _report_dropped(self, event: DroppedMessage) -> None:
        try:
            self.dispatcher.message_dropped(event)
        except Exception:  # the application's hook must not stop reading
            log.exception("message_dropped hook failed")

    def _enqueue(self, key: Any, item: Any) -> None:
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = deque()
            worker = self._loop.create_task(self._work(key, queue))
            self._workers.add(worker)
            worker.add_done_callback(self._workers.discard)
        queue.append(item)
        self._queued += 1

    async def _work(self, key: Any, queue: deque[Any]) -> None:
        try:
            while queue:
                item = queue[0]
                if isinstance(item, IncomingNotification):
                    try:
                        await self.dispatcher.handle_notification(item)
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("notification handler for %.100s failed", item.method)
                elif isinstance(item, IncomingResponse):
                    self._resolve(item)
                else:
                    self._held.discard(item.id)
                    self._start_request(item)
                queue.popleft()
                self._queued -= 1
                if self._reading_paused:
                    self._maybe_resume_reading()
        finally:
            if self._queues.get(key) is queue:
                del self._queues[key]

    def _resolve(self, event: IncomingResponse) -> None:
        fut = self._futures.pop(event.call.id, None)
        if fut is None or fut.done():
            return
        if event.error is not None:
            fut.set_exception(event.error)
        else:
            fut.set_result(event.result)

    # -- answering the peer's requests ----------------------------------------------

    def _start_request(self, event: IncomingRequest) -> None:
        if self._closed is not None:
            return  # closed while this chunk was being handled: nobody is left to answer
        if self._running < self._max_running:
            self._launch(event)
        else:
            self._backlog.append(event)

    def _launch(self, event: IncomingRequest) -> None:
        self._running += 1
        coro = self._run_request(event)
        task: asyncio.Task[None] | None
        if self._loop.get_task_factory() is not None:
            task = self._loop.create_task(coro)
            self._unstarted.add(event.id)
        elif self._eager is None:
            # The handler's first step runs now (eager start): one that answers without
            # awaiting costs no trip through the event loop, and current_task() still
            # works inside it. It may finish (and run _run_request's cleanup) right here.
            if sys.version_info >= (3, 12):  # (always so without an EagerStarter)
                task = eager_task_factory(self._loop, coro)
        else:
            task = self._eager.start(coro)  # the same on 3.11
            if self._eager.deferred:
                self._unstarted.add(event.id)
        if task is not None and not task.done():
            self._inbound[event.id] = task

    def _launch_waiting(self) -> None:
        # A loop, not recursion: with eager start, a launched request can finish inside
        # _launch and call back here; that inner call returns and this loop goes on.
        if self._launching:
            return
        self._launching = True
        try:
            while self._backlog and self._running < self._max_running and self._closed is None:
                self._launch(self._backlog.popleft())
        finally:
            self._launching = False

    def _peer_cancels(self, rid: Any) -> None:
        if rid in self._held:  # waits behind notifications: answered -32800 when it starts
            self._peer_cancelled.add(rid)
            return
        task = self._inbound.get(rid)
        if task is not None and not task.done():
            self._peer_cancelled.add(rid)
            if rid in self._unstarted:
                # Launched but not started (the cancel came in the same read): cancelling
                # the task now would end it before its first line, unanswered and still
                # holding a running slot. _run_request answers -32800 when it starts.
                return
            task.cancel()
            return
        for waiting in self._backlog:
            if waiting.id == rid:
                self._backlog.remove(waiting)
                self._send(self.state.error(rid, RequestError.request_cancelled()))
                return

    async def _run_request(self, event: IncomingRequest) -> None:
        # One coroutine per inbound request (no nested helper coroutines: each costs a frame).
        if self._unstarted:
            self._unstarted.discard(event.id)
        span = None
        if _tracing.tracing():  # a span for the handler, continuing the trace in `_meta`
            span, token = _tracing.start_server_span(event.method, event.params)
        try:
            if self._peer_cancelled and event.id in self._peer_cancelled:
                raise asyncio.CancelledError  # cancelled by the peer before it started
            result = await self.dispatcher.handle_request(event)
        except asyncio.CancelledError:
            if event.id in self._peer_cancelled and self._closed is None:
                self._send(self.state.error(event.id, RequestError.request_cancelled()))
            else:
                raise
        except RequestError as err:
            self._send(self.state.error(event.id, err))
        except ConnectionClosed as closed:
            if self._closed is None and not self._input_done:  # another connection's
                self._send(self._internal_error(event, "handler for %.100s failed"))
            else:  # ours ended (e.g. stdin EOF) while the handler waited on the peer
                log.info("%.100s not answered: %s", event.method, closed)
        except Exception:
            self._send(self._internal_error(event, "handler for %.100s failed"))
        else:
            try:
                result = checked_result(event.spec, result)
                frame = self.state.result(event.id, event.method, result)
            except InvalidResult as bad:  # our handler's bug: logged here, -32603 to the peer
                frame = self._invalid_result(event, bad)
            except Exception:
                frame = self._internal_error(event, "could not encode the result of %.100s")
            self._send(frame)
        finally:
            if span is not None:
                _tracing.end_server_span(span, token)
            self._running -= 1
            self._inbound.pop(event.id, None)
            self._peer_cancelled.discard(event.id)
            if event.method in HANDSHAKE_METHODS and self._closed is None:
                self._take_in(self.state.take_deferred())  # what arrived while it was answered
            if self._backlog:
                self._launch_waiting()
            if self._reading_paused:
                self._maybe_resume_reading()

    def _internal_error(self, event: IncomingRequest, what: str) -> bytes:
        """Log the exception being handled under a correlation id the peer gets instead of details."""
        correlation = os.urandom(6).hex()
        log.exception(what + " (correlation id %s)", event.method, correlation)
        return self.state.error(
            event.id, RequestError.internal_error({"correlationId": correlation})
        )

    def _invalid_result(self, event: IncomingRequest, bad: InvalidResult) -> bytes:
        correlation = os.urandom(6).hex()
        log.error("answered %s with -32603: %s (correlation id %s)", event.method, bad, correlation)
        return self.state.error(
            event.id, RequestError.internal_error({"correlationId": correlation})
        )

    # -- calling the peer ----------------------------------------------------------

    async def _request(
        self, method: str, params: Any, *, timeout: float | None = None, check_gate: bool = True
    ) -> Any:
        # `request` (typed per method in _generated_requests.py) calls this.
        if self._closed is not None:
            raise self._closed
        span = None
        if _tracing.tracing():  # its context goes to the peer in `params._meta`
            span, params = _tracing.start_client_span(method, params)
        rid, frame, _call = self.state.start_request(method, params, check_gate=check_gate)
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._futures[rid] = fut
        self._send(frame)
        try:
            if timeout is None:
                return await fut
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            self._cancel_outbound(rid)
            raise RequestTimeout(f"{method} got no answer within {timeout} s") from None
        except asyncio.CancelledError:
            self._cancel_outbound(rid)
            raise
        finally:
            self._futures.pop(rid, None)
            if span is not None:
                span.end()

    def _cancel_outbound(self, rid: Any) -> None:
        if self._closed is not None:
            return
        frame = self.state.cancel_outbound(rid)
        if frame is not None:
            self._send(frame)

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification, in order with everything we send; waits only while the
        transport's buffer is full. Raises `ConnectionClosed` or `CapabilityError`."""
        if self._closed is not None:
            raise self._closed
        self._send(self.state.notification(method, params))
        if self._writer.backed_up():
            await self._writer.drain()

    def notification_head(self, method: str) -> bytes | None:
        """What opens each frame of a notification of `method` on this connection, up to
        its params (see `ProtocolState.notification_head`; None when frames are not
        newline-delimited). For `notify_frame`."""
        if self._closed is not None:
            raise self._closed
        return self.state.notification_head(method)

    async def notify_frame(self, frame: bytes) -> None:
        """Send a whole notification frame made from `notification_head` (head, params'
        JSON, `}` and a newline), as `notify` sends one."""
        if self._closed is not None:
            raise self._closed
        self._send(frame)
        if self._writer.backed_up():
            await self._writer.drain()
