"""tools/cluster's services: a `with` whose start fails halfway leaves nothing behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from tools.cluster._postgres import LocalPostgres, NotInstalled, PostgresUnavailable

pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster]


class NotingPostgres(LocalPostgres):
    """Notes the directory its start made, whether or not the start succeeds."""

    made: Path | None = None

    def start(self) -> None:
        try:
            super().start()
        finally:
            self.made = self.base


def test_a_postgres_that_fails_to_start_is_cleaned_up(
    not_installed: Callable[[Exception], NoReturn],
) -> None:
    # initdb makes the data directory; then the server refuses the unknown setting.
    server = NotingPostgres(settings={"acpstack_no_such_setting": "1"})
    try:
        with pytest.raises(PostgresUnavailable, match="pg_ctl start failed"), server:
            pytest.fail("the with block must not run")
    except NotInstalled as exc:
        not_installed(exc)
    assert server.made is not None
    assert server.base is None and not server.made.exists()  # stop() ran and cleaned up
