"""Public signatures that were `Any` are typed: a type checker sees through them. The code
below is checked by mypy, in process, in a directory of its own under .cache/ (a fixed
path: mypy's cache keeps the file name of errors it reuses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

WORK = Path(__file__).resolve().parents[2] / ".cache" / "mypy-typed-api"

USER_CODE = """
from acpstack.agent import SessionStore, Turn

def check(store: SessionStore, turn: Turn) -> None:
    store.update("s", titel="typo")
    store.update("s", archived="yes")
    store.update("s", title=None, archived=True, additional_directories=("/a",), meta={})
    reveal_type(turn.client)
"""


def test_store_update_and_turn_client_are_typed() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / "user_code.py"
    source.write_text(USER_CODE)
    out, err, _ = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(WORK / "cache"),
            str(source),
        ]
    )
    assert err == ""
    # (mypy names the file relative to the working directory)
    found = re.findall(r"user_code\.py:(\d+): (.*)", out)
    messages = [message for _, message in found]
    # A misspelt field and a wrong value type are caught; the valid call passes.
    assert any('Unexpected keyword argument "titel"' in m for m in messages), out
    assert any('Argument "archived"' in m and '"bool"' in m for m in messages), out
    valid = 1 + next(i for i, line in enumerate(USER_CODE.splitlines()) if "title=None" in line)
    assert str(valid) not in [line for line, _ in found], out
    assert 'note: Revealed type is "acpstack.agent._agent.ClientPeer"' in messages, out
