"""The workloads of the two asyncio clients (acpstack's and the official Python SDK's),
written once over a small adapter (`Driver`) so both measure the same thing the same way.

Every timed part ends when the prompt's response has arrived and every update it caused has
been through the client's handler (an SDK may hand notifications over after the response).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from _common import (
    BIG,
    COLD,
    CONCURRENT,
    N_READS,
    N_ROUND_TRIPS,
    N_SESSIONS_W6,
    STREAMS,
    WARM_READS,
    WARM_ROUND_TRIPS,
    WARM_STREAM,
    file_text,
    percentiles,
    rss_mb,
    status_mb,
)

SETTLE_TIMEOUT = 30.0  # seconds an update may trail its prompt's response


class Tally:
    """What a client received and answers; its `session_update` handler keeps `counts` and
    calls `fail` when an update's index or size is not the expected one."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.size = 40  # characters expected in every update's text
        self.read_content = "hello\n"  # what fs/read_text_file answers
        self.failure: str | None = None

    def fail(self, sid: str, text: str) -> None:
        if self.failure is None:
            self.failure = (
                f"session {sid}: update {text[:8]!r} of {len(text)} characters, expected "
                f"index {self.counts.get(sid, 0)} of {self.size}"
            )


class Driver(Protocol):
    @property
    def tally(self) -> Tally: ...

    @property
    def agent_pid(self) -> int: ...

    @property
    def send_prompt(self) -> Callable[[Any], Awaitable[object]]:
        """Sends a request made by `prompt_request`; returns once it is answered."""

    async def new_session(self) -> str: ...

    def prompt_request(self, sid: str, text: str) -> Any: ...


async def measure(workload: str, d: Driver, started: float) -> dict[str, object]:
    """Run `workload` on a connection that has just been initialized."""
    if workload == "W5":
        return {"value": (time.perf_counter() - started) * 1000}
    if workload == "W6":
        for _ in range(N_SESSIONS_W6):
            await d.new_session()
        return {"value": rss_mb(d.agent_pid)}
    if workload not in COLD:
        await warm_up(d)
    if workload in STREAMS:
        count, size = STREAMS[workload]
        return {"value": count / await stream(d, count, size)}
    if workload in CONCURRENT:
        return await concurrent(d, *CONCURRENT[workload])
    sid = await d.new_session()
    if workload == "W2":
        samples = []
        request = d.prompt_request(sid, "noop")
        for _ in range(N_ROUND_TRIPS):
            t0 = time.perf_counter()
            await d.send_prompt(request)
            samples.append((time.perf_counter() - t0) * 1e6)
        return percentiles(samples)
    if workload == "W3":
        t0 = time.perf_counter()
        await d.send_prompt(d.prompt_request(sid, f"read {N_READS}"))
        return {"value": N_READS / (time.perf_counter() - t0)}
    if workload == "BIG-UPDATE":
        return {"value": await stream(d, 1, BIG) * 1000, **peaks(d)}
    if workload == "BIG-READ":
        d.tally.read_content = file_text(BIG)
        t0 = time.perf_counter()
        await d.send_prompt(d.prompt_request(sid, f"read 1 {BIG}"))  # the agent checks the size
        return {"value": (time.perf_counter() - t0) * 1000, **peaks(d)}
    raise SystemExit(f"unknown workload {workload}")


async def warm_up(d: Driver) -> None:
    """The warm-up round; its reverse requests only where the protocol has them (a driver
    with `reverse_requests = False`: protocol v2, which has no client `fs/*`)."""
    sid = await d.new_session()
    await d.send_prompt(d.prompt_request(sid, f"stream {WARM_STREAM}"))
    await settle(d.tally, [sid], WARM_STREAM)
    request = d.prompt_request(sid, "noop")
    for _ in range(WARM_ROUND_TRIPS):
        await d.send_prompt(request)
    if getattr(d, "reverse_requests", True):
        await d.send_prompt(d.prompt_request(sid, f"read {WARM_READS}"))


async def stream(d: Driver, count: int, size: int) -> float:
    """Seconds for one prompt streaming `count` updates of `size` characters."""
    sid = await d.new_session()
    d.tally.size = size
    request = d.prompt_request(sid, f"stream {count} {size}")
    t0 = time.perf_counter()
    await d.send_prompt(request)
    await settle(d.tally, [sid], count)
    return time.perf_counter() - t0


async def concurrent(d: Driver, sessions: int, updates: int) -> dict[str, object]:
    """`sessions` sessions prompt at once, each streaming `updates` updates."""
    sids = [await d.new_session() for _ in range(sessions)]
    requests = [d.prompt_request(s, f"stream {updates}") for s in sids]
    t0 = time.perf_counter()
    await asyncio.gather(*(d.send_prompt(r) for r in requests))
    await settle(d.tally, sids, updates)
    elapsed = time.perf_counter() - t0
    return {"value": elapsed, "rate": sessions * updates / elapsed}


async def settle(tally: Tally, sids: Sequence[str], count: int) -> None:
    """Return once every session in `sids` has had `count` updates handled."""
    deadline = time.perf_counter() + SETTLE_TIMEOUT
    for sid in sids:
        while tally.counts.get(sid, 0) < count:
            if time.perf_counter() > deadline or tally.failure:
                break
            await asyncio.sleep(0)  # let the SDK's queued handlers run
    if tally.failure:
        raise SystemExit(tally.failure)
    missing = [s for s in sids if tally.counts.get(s, 0) != count]
    if missing:
        raise SystemExit(f"{len(missing)} sessions without {count} updates, e.g. {missing[0]}")


def peaks(d: Driver) -> dict[str, float]:
    """Peak RSS (VmHWM) of this client and of the agent, in MB."""
    return {
        "client peak": status_mb("self", "VmHWM"),
        "agent peak": status_mb(d.agent_pid, "VmHWM"),
    }
