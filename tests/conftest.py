"""Every async test in tests/core and tests/e2e runs twice: on the stdlib event loop and
on uvloop (the other directories run on the stdlib loop only, to keep CI short).

Agents started by these tests serve on uvloop when it is installed (`acpstack.run`), and
the test process itself is the client: running it on both loops covers the push-based
transports with both loops' pipe implementations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

BOTH_LOOPS = {"core", "e2e"}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], Any]]:
    factories: dict[str, Callable[[], Any]] = {"asyncio": asyncio.new_event_loop}
    if item.path.parent.name not in BOTH_LOOPS:
        return factories
    try:
        import uvloop
    except ImportError:  # the `fast` extra is optional
        return factories
    factories["uvloop"] = uvloop.new_event_loop
    return factories


def pytest_configure(config: pytest.Config) -> None:
    """Nothing a test starts may read or write the user's own acpstack data: the session
    store, chat history, config and caches go to a directory of this test run (inherited by
    every process the tests start). Tests that need a specific place still pass their own."""
    import os
    import tempfile

    home = tempfile.mkdtemp(prefix="acpstack-tests-")
    for name in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        os.environ[name] = os.path.join(home, name.lower())
    os.environ.pop("ACPSTACK_STORE", None)
