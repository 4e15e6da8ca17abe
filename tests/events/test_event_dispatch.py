"""`UpdateDispatch` over the events: one handler per kind of the table, checked when built."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acpstack import events as ev
from acpstack.schema import v1

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _samples import SAMPLES  # noqa: E402


def test_each_event_goes_to_the_handler_of_its_kind() -> None:
    dispatch = ev.UpdateDispatch({kind: kind for kind in ev.UPDATE_KINDS}, unknown="?")
    assert [dispatch.handler(e) for e in SAMPLES] == [ev.kind_of(e) for e in SAMPLES]
    assert dispatch.handler(ev.UnknownEvent({"sessionUpdate": "plan"})) == "?"
    # A wire struct with a known tag is not an event.
    assert dispatch.handler(v1.AgentMessageChunk(content=v1.TextContent(text="x"))) == "?"


def test_a_map_that_misses_or_invents_a_kind_is_refused() -> None:
    handlers = {kind: kind for kind in ev.UPDATE_KINDS}
    del handlers["state_update"]
    with pytest.raises(ValueError, match="state_update"):
        ev.UpdateDispatch(handlers, unknown="?")
    with pytest.raises(ValueError, match="hologram"):
        ev.UpdateDispatch({**handlers, "state_update": "", "hologram": ""}, unknown="?")
