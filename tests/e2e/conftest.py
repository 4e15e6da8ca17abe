"""Every async test here runs twice: on the stdlib event loop and on uvloop.

Agents started by these tests serve on uvloop when it is installed (`acpstack.run`), and
the test process itself is the client: running it on both loops covers the push-based
transports with both loops' pipe implementations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Mapping[str, Callable[[], Any]]:
    factories: dict[str, Callable[[], Any]] = {"asyncio": asyncio.new_event_loop}
    try:
        import uvloop
    except ImportError:  # the `fast` extra is optional
        return factories
    factories["uvloop"] = uvloop.new_event_loop
    return factories
