"""`acpstack inspect --hops`: hop recordings merged into one view (hand-written recordings,
so each rule is checked on its own; tests/proxy/test_chain.py records a real chain)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.traffic import RecordingError, hop_lines, read_hops

pytestmark = pytest.mark.timeout(30)


def recording(path: Path, *records: dict[str, Any]) -> None:
    header = {"acpstack": "traffic", "version": 1, "started": 0}
    path.write_text("".join(json.dumps(r) + "\n" for r in (header, *records)))


def test_hops_are_merged_in_time_order_with_the_hop_on_a_tie(tmp_path: Path) -> None:
    prompt = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}}
    wrapped = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "proxy/successor",
        "params": {"method": "session/prompt", "params": {}},
    }
    recording(
        tmp_path / "1-agent.jsonl",
        {"ts": 3.0, "from": "client", "message": prompt},
        {"ts": 4.0, "from": "agent", "message": {"jsonrpc": "2.0", "id": 1, "result": {}}},
    )
    recording(
        tmp_path / "0-proxy.jsonl",
        {"ts": 1.0, "from": "client", "message": prompt},
        {"ts": 3.0, "from": "agent", "message": wrapped},
        {"ts": 5.0, "from": "agent", "stderr": "a log line"},
    )
    (tmp_path / "notes.txt").write_text("not a hop\n")
    hops = read_hops(tmp_path)
    assert [(h.hop, h.record.ts) for h in hops] == [
        (0, 1.0),
        (0, 3.0),
        (1, 3.0),
        (1, 4.0),
        (0, 5.0),
    ]
    lines = hop_lines(hops)
    assert "conductor → proxy 0" in lines[0] and "request #1 session/prompt" in lines[0]
    assert "proxy 0 → conductor" in lines[1] and "proxy/successor ⟨session/prompt⟩" in lines[1]
    assert "hop 1" in lines[2] and "conductor → agent" in lines[2]
    assert "agent → conductor" in lines[3] and "result #1" in lines[3]
    assert "stderr: a log line" in lines[4]
    assert lines[2].startswith("  2000.000 ms")


def test_a_directory_without_hops_or_with_a_broken_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no hop recordings"):
        read_hops(tmp_path)
    (tmp_path / "0-proxy.jsonl").write_text('{"not": "a recording"}\n')
    with pytest.raises(RecordingError, match="0-proxy.jsonl"):
        read_hops(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "acpstack", "inspect", "--hops", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "cannot show the hops" in done.stderr and "0-proxy.jsonl" in done.stderr
