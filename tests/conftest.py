"""Every async test in tests/core and tests/e2e runs twice: on the stdlib event loop and
on uvloop (the other directories run on the stdlib loop only, to keep CI short).

Agents started by these tests serve on uvloop when it is installed (`acpstack.run`), and
the test process itself is the client: running it on both loops covers the push-based
transports with both loops' pipe implementations.

`postgres_url` gives a test an empty schema on a throwaway PostgreSQL server (see below).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator, Mapping
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


# -- PostgreSQL ------------------------------------------------------------------------
# One throwaway server (tools/cluster) for the whole run, started on first use; each test
# gets a schema of its own in it. Where PostgreSQL or psycopg is missing, or the server
# does not start, the tests that need it skip and say why.


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    from tools.cluster._postgres import LocalPostgres, PostgresUnavailable

    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip('psycopg is not installed (pip install "acpstack[postgres]")')
    server = LocalPostgres()
    try:
        server.start()
    except PostgresUnavailable as exc:
        server.stop()
        pytest.skip(f"PostgreSQL is not available: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: Any) -> str:
    """A libpq URL whose tables live in a new, empty schema."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return f"{postgres_server.url()}&options=-csearch_path%3D{schema}"
