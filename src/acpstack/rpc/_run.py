"""Run a coroutine on the fastest event loop available.

uvloop (the `acpstack[fast]` extra) makes a pipe round trip a little faster than the
stdlib loop on Linux (W2 p50 31 against 37 µs, once the stdlib transports read 64 KiB at a
time: acpstack._reads); when it is not installed, or ACPSTACK_EVENT_LOOP=asyncio is set, the
standard asyncio loop runs instead. Everything in acpstack works on both.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def event_loop_name() -> str:
    """ "uvloop" when `run` would use it, else "asyncio"."""
    if os.environ.get("ACPSTACK_EVENT_LOOP", "").lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """Like `asyncio.run(main)`, on uvloop when it is installed."""
    if event_loop_name() == "uvloop":
        import uvloop

        result: T = uvloop.run(main)
        return result
    return asyncio.run(main)
