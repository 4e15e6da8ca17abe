"""`acpstack.rpc.trace_ids`: the trace and span id of the W3C `traceparent` a message
carries in its `_meta` (what `chat --json` and `inspect` show), and None for anything else."""

from __future__ import annotations

from typing import Any

import pytest

from acpstack.rpc import trace_ids

TRACE, SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
GOOD = f"00-{TRACE}-{SPAN}-01"


@pytest.mark.parametrize("part", ["params", "result"])
def test_a_traceparent_in_params_or_result_meta(part: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, part: {"_meta": {"traceparent": GOOD}}}
    assert trace_ids(message) == {"traceId": TRACE, "spanId": SPAN}


@pytest.mark.parametrize(
    "message",
    [
        None,
        "text",
        [1, 2],
        {"params": None},
        {"params": {"_meta": "x"}},
        {"params": {"_meta": {"traceparent": 5}}},
        {"params": {"_meta": {"traceparent": GOOD.upper()}}},  # W3C: lowercase hex only
        {"params": {"_meta": {"traceparent": GOOD + "-extra"}}},
        {"params": {"_meta": {"traceparent": f"00-{TRACE[:-1]}-{SPAN}-01"}}},
        {"params": {"traceparent": GOOD}},  # not in `_meta`
    ],
)
def test_anything_else_has_none(message: Any) -> None:
    assert trace_ids(message) is None
