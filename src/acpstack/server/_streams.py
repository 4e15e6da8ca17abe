"""Outbound streams: the messages waiting for one receiver (an SSE response or a WebSocket),
numbered so that a receiver that lost its connection can resume where it was.

Messages are held until a receiver takes them, so a session's stream may be fed before
the client opened it. Every message gets the next position of its stream (1, 2, 3, ...):
the SSE event id over HTTP, the count of messages received over WebSocket. What a
receiver took stays in a replay buffer (up to `replay_bytes`, the oldest dropped first),
so a client that comes back with the last position it has (`Last-Event-ID`) gets every
later message again, exactly once and in order (`resume`).

A stream has at most one receiver. A new receiver that resumes takes the stream over (the
old one's connection is dead or dying: its loop sees `current` turn False and stops).
Each stream reports the size of what waits to be sent to its connection, which stops
reading from the agent while too much is waiting (backpressure).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable

SizeCallback = Callable[[int], None]
DEFAULT_REPLAY_BYTES = 1024 * 1024


class ResumeRefused(Exception):
    """A receiver asked to resume from a position this stream cannot resume from."""


class OutboundStream:
    __slots__ = (
        "session_id",
        "_frames",
        "size",
        "_sent",
        "_sent_size",
        "_first_sent",
        "taken",
        "replay_bytes",
        "receiver",
        "_receivers",
        "closed",
        "_waiter",
        "_on_size",
        "_listener",
    )

    def __init__(
        self,
        session_id: str | None,
        on_size: SizeCallback,
        replay_bytes: int = DEFAULT_REPLAY_BYTES,
    ) -> None:
        self.session_id: str | None = session_id
        self._frames: deque[bytes] = deque()  # not sent yet
        self.size: int = 0  # bytes in _frames
        self._sent: deque[bytes] = deque()  # sent, kept for a resume
        self._sent_size = 0
        self._first_sent = 1  # the position of _sent[0]
        self.taken: int = 0  # the position of the last message handed to a receiver
        self.replay_bytes: int = replay_bytes
        self.receiver: int = 0  # the current receiver's number; 0: none
        self._receivers = 0
        self.closed: bool = False
        self._waiter: asyncio.Future[bool] | None = None
        self._on_size = on_size
        self._listener: Callable[[bool], None] | None = None

    @property
    def position(self) -> int:
        """The position of the last message pushed (0: none yet)."""
        return self.taken + len(self._frames)

    @property
    def attached(self) -> bool:
        return self.receiver != 0

    @property
    def empty(self) -> bool:
        return not self._frames

    @property
    def used(self) -> bool:
        """Whether any message went through (a resume may ask for it)."""
        return self.position > 0

    def push(self, frame: bytes, *, wake: bool = True) -> None:
        """Add `frame` for the receiver. `wake=False`: the caller pushes more and calls
        `wake_now` once it is done."""
        if self.closed:
            return
        self._frames.append(frame)
        self.size += len(frame)
        self._on_size(len(frame))
        if wake:
            self._wake()

    def push_many(self, frames: list[bytes]) -> None:
        """`push` for several frames, without waking the receiver (the caller does)."""
        if self.closed:
            return
        self._frames.extend(frames)
        size = sum(map(len, frames))
        self.size += size
        self._on_size(size)

    def take(self) -> tuple[int, list[bytes]]:
        """The messages waiting, and the position of the first; they move to the replay
        buffer."""
        first = self.taken + 1
        frames = list(self._frames)
        if not frames:
            return first, frames
        self._frames.clear()
        self.taken += len(frames)
        size, self.size = self.size, 0
        self._on_size(-size)
        if self.replay_bytes > 0:
            self._sent.extend(frames)
            self._sent_size += size
            self._trim()
        else:
            self._first_sent = self.taken + 1
        return first, frames

    def _trim(self) -> None:
        sent = self._sent
        while self._sent_size > self.replay_bytes and sent:
            self._sent_size -= len(sent.popleft())
            self._first_sent += 1

    def resume(self, after: int) -> None:
        """Send again every message after position `after` (the last one the receiver
        has); forget the ones up to it. Raises ResumeRefused when `after` is beyond what
        was sent, or older than what the replay buffer still holds."""
        if after < 0 or after > self.taken:
            raise ResumeRefused(
                f"position {after} was never sent on this stream (the last is {self.taken})"
            )
        if after + 1 < self._first_sent:
            raise ResumeRefused(
                f"the messages after position {after} are no longer held "
                f"(the oldest held is {self._first_sent})"
            )
        sent = self._sent
        while self._first_sent <= after and sent:
            self._sent_size -= len(sent.popleft())
            self._first_sent += 1
        again = len(sent)
        if again:
            size = self._sent_size
            self._frames.extendleft(reversed(sent))
            sent.clear()
            self._sent_size = 0
            self.size += size
            self._on_size(size)
            self.taken -= again
        self._first_sent = self.taken + 1
        self._wake()

    def attach(self, *, takeover: bool = False) -> int:
        """Claim the stream for a receiver: its number, or 0 when another receiver has it
        (409) or the stream is closed. `takeover`: replace the current receiver."""
        if self.closed or (self.receiver and not takeover):
            return 0
        self._receivers += 1
        self.receiver = self._receivers
        self._wake()  # a replaced receiver's loop wakes up and stops
        return self.receiver

    def current(self, receiver: int) -> bool:
        """Whether `receiver` still has the stream."""
        return self.receiver == receiver

    def detach(self, receiver: int) -> None:
        if self.receiver == receiver:
            self.receiver = 0

    def close(self) -> None:
        self.closed = True
        self._frames.clear()
        if self.size:
            size, self.size = self.size, 0
            self._on_size(-size)
        self._sent.clear()
        self._sent_size = 0
        self._wake()

    async def wait(self, timeout: float, also: asyncio.Future[object] | None = None) -> bool:
        """Wait until there is something to take, the stream closed or changed receiver
        (or `also` finished). False when the timeout passed first."""
        if self._frames or self.closed or (also is not None and also.done()):
            return True
        # one future and one timer (`asyncio.wait` makes a second future and a set per
        # call): this runs once per event a quiet stream sends
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(timeout, _settle, waiter, False)
        wake = functools.partial(_settle, waiter, True)
        if also is not None:
            also.add_done_callback(wake)
        try:
            return await waiter
        finally:
            timer.cancel()
            if also is not None:
                also.remove_done_callback(wake)
            if self._waiter is waiter:
                self._waiter = None
            if not waiter.done():
                waiter.cancel()

    def listen(self, listener: Callable[[bool], None] | None) -> None:
        """Call `listener` (too) whenever `wait` would wake: a receiver that needs no task.
        Its argument says whether it may send at once (`wake_now`: the pusher is done) or
        should send a little later (more may come in the same turn of the loop)."""
        self._listener = listener

    def unlisten(self, listener: Callable[[bool], None]) -> None:
        """Stop calling `listener` (a receiver that took over meanwhile keeps its own)."""
        if self._listener == listener:
            self._listener = None

    def wake_now(self) -> None:
        """After pushes with `wake=False`: wake the receiver, which may send them now."""
        self._wake(now=True)

    def _wake(self, *, now: bool = False) -> None:
        if self._listener is not None:
            self._listener(now)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)


def _settle(waiter: asyncio.Future[bool], woken: bool, *_: object) -> None:
    if not waiter.done():
        waiter.set_result(woken)
