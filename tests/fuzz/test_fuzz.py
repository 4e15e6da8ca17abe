"""A short fuzzing run (fixed seeds) against a real `acpstack agent` process and a real
`ClientRuntime` process, on both event loops. The long run is `python -m tools.fuzz`
(docs/robustness.md). Invariants: no death, no hang, only valid JSON-RPC out, every
request answered exactly once, never a reply to a notification or a response."""

from __future__ import annotations

import pytest

from tools.fuzz._run import fuzz

INPUTS = 2500


@pytest.mark.timeout(240)
@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
@pytest.mark.parametrize("target", ["agent", "client"])
async def test_a_fuzzing_run_finds_nothing(target: str, loop: str) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    seed = {"agent": 20261123, "client": 20261124}[target] + (loop == "asyncio")
    report = await fuzz(target, INPUTS, seed, env={"ACPSTACK_EVENT_LOOP": loop})
    assert report.ok, report.summary()
    assert report.exit_code == 0
    # The run really exercised the peer: answers of every kind came back.
    assert report.stats.answers > INPUTS // 4
    assert {-32700, -32600, -32601, -32602} <= set(report.stats.error_codes)
