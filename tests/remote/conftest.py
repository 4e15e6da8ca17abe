"""The remote tests import their helpers (`_serving`, `_probe`) from this directory; the
failover runs' counts are printed at the end of the run."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the failover runs counted (tests/remote/test_failover.py)."""
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
