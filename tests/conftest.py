"""Every async test in tests/core and tests/e2e runs twice: on the stdlib event loop and
on uvloop (the other directories run on the stdlib loop only, to keep CI short).

Agents started by these tests serve on uvloop when it is installed (`acpstack.run`), and
the test process itself is the client: running it on both loops covers the push-based
transports with both loops' pipe implementations.

`postgres_url` gives a test an empty schema on a throwaway PostgreSQL server (see below).
Tests that need PostgreSQL or HAProxy skip only when it is not installed.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

import pytest
from hypothesis import HealthCheck, settings

BOTH_LOOPS = {"core", "e2e"}

# Hypothesis: no per-example deadline and no "too slow" health check anywhere (both judge
# the machine's load, not the code); CI also draws the same examples every run and prints
# the blob that reproduces a failure. A test's own @settings still wins over these.
settings.register_profile(
    "acpstack", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", settings.get_profile("acpstack"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "acpstack")

# pytest-xdist's workers run with COLUMNS=80 and LINES=24 in their environment, which the
# chat's terminal tests' programs would take over the size of the terminal given to them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

# CI sets ACPSTACK_NO_SKIPS for the main run: a test that skips there (node, tmux, an SDK
# that did not install, ...) is a failure, so "green" never means "not run". These skips
# stay allowed: they say something about the machine that CI cannot change.
NO_SKIPS = "ACPSTACK_NO_SKIPS"
ALLOWED_SKIPS = (
    "root ignores file permissions",
    "chromium is not installed",  # .ci/run installs it when it can; the page test may skip
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and os.environ.get(NO_SKIPS)) or hasattr(report, "wasxfail"):
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    if not any(allowed in reason for allowed in ALLOWED_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"skipped, but {NO_SKIPS} is set, so this test must run: {reason}"


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


# -- PostgreSQL and HAProxy --------------------------------------------------------------
# One throwaway PostgreSQL server (tools/cluster) for the whole run, started on first use;
# each test gets a schema of its own in it. A test that needs PostgreSQL or HAProxy skips
# only when the program is not installed, and says so; anything else that goes wrong
# (the server does not start, ...) fails the test. CI installs both and sets
# ACPSTACK_REQUIRE_ENGINES, which turns even that skip into a failure.

REQUIRE_ENGINES = "ACPSTACK_REQUIRE_ENGINES"


def skip_not_installed(exc: Exception) -> NoReturn:
    """Skip the test for a program that is not installed, unless CI requires it."""
    if os.environ.get(REQUIRE_ENGINES):
        pytest.fail(f"{exc}; {REQUIRE_ENGINES} is set, so this test must run here")
    pytest.skip(str(exc))


@pytest.fixture(scope="session")
def not_installed() -> Callable[[Exception], NoReturn]:
    """`except NotInstalled as exc: not_installed(exc)` in a test (skip, or fail in CI)."""
    return skip_not_installed


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    from tools.cluster._postgres import LocalPostgres, NotInstalled

    server = LocalPostgres()
    try:
        server.start()
    except NotInstalled as exc:
        server.stop()
        skip_not_installed(exc)
    except BaseException:
        server.stop()
        raise
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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the failover runs counted (tests/remote/test_failover.py). Here and not
    in tests/remote: under pytest-xdist the process that prints the summary loads only this
    conftest; the counts come to it in the reports' user_properties."""
    lines = [
        value
        for report in terminalreporter.stats.get("passed", [])
        for name, value in getattr(report, "user_properties", [])
        if name == "failover"
    ]
    if lines:
        terminalreporter.section("failover runs")
        for line in lines:
            terminalreporter.write_line(line)
