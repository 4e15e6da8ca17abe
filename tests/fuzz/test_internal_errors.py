"""The fuzzer's record of -32603 answers: each is tied to the line that provoked it and to
the traceback the target logged under the answer's correlation id, and grouped by cause.
The target is a real process (a few lines of Python) that answers like a failing handler."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools.fuzz._harness import Target
from tools.fuzz._internal_errors import InternalErrorLog

# Answers each request with -32603 and logs a traceback the way logging.exception does;
# requests whose method ends in "2" fail in another place than the others.
FAILING_PEER = r"""
import json, sys
n = 0
for line in sys.stdin:
    request = json.loads(line)
    n += 1
    where = "second" if request["method"].endswith("2") else "first"
    sys.stderr.write("WARNING:acpstack.wire:a bad line\n")
    sys.stderr.write(
        ("ERROR:acpstack.rpc:" if n % 2 else "acpstack agent: ERROR acpstack.rpc: ")
        + f"handler for {request['method']} failed (correlation id c0ffee{n:02x})\n"
        "Traceback (most recent call last):\n"
        f'  File "/x/handlers.py", line {n * 10}, in {where}\n'
        "    boom()\n"
        f'  File "/x/{where}.py", line 7, in boom\n'
        "    raise KeyError('k')\n"
        "KeyError: 'k'\n"
    )
    sys.stderr.write("INFO:acpstack.rpc:next\n" if n % 2 else "acpstack agent: INFO x: next\n")
    sys.stderr.flush()
    error = {"code": -32603, "message": "Internal error", "data": {"correlationId": f"c0ffee{n:02x}"}}
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}), flush=True)
"""


@pytest.mark.timeout(30)
async def test_each_internal_error_is_tied_to_its_input_and_traceback(tmp_path: Path) -> None:
    record = InternalErrorLog()
    target = Target([sys.executable, "-c", FAILING_PEER], cwd=str(tmp_path), internal_errors=record)
    await target.start()
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"a/one","params":{"x":1}}',
        b'{"jsonrpc":"2.0","id":"two","method":"a/two2","params":{}}',
        b'{"jsonrpc":"2.0","id":3,"method":"a/three","params":[]}',
    ]
    for n, line in enumerate(lines):
        await target.send(line, "answer", [1, "two", 3][n])
    await target.settle(final=True)
    assert await target.close() == 0
    assert not target.violations
    report = tmp_path / "internal.txt"
    record.write(report)

    assert [e.line for e in record.errors] == lines
    assert [e.correlation for e in record.errors] == ["c0ffee01", "c0ffee02", "c0ffee03"]
    assert record.errors[1].traceback[-1] == "KeyError: 'k'"
    assert not any("INFO" in t or "WARNING" in t for e in record.errors for t in e.traceback)
    groups = record.groups()
    assert list(map(len, groups.values())) == [2, 1]
    first, second = groups
    assert '"/x/first.py", line 7, in boom' in first and first.endswith("KeyError: 'k'")
    assert '"/x/second.py"' in second
    text = report.read_text()
    assert text.startswith("3 internal errors (-32603)\n")
    assert '- id "two": {"jsonrpc":"2.0","id":"two","method":"a/two2"' in text
