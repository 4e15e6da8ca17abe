"""The remote tests import their helpers (`_serving`, `_probe`) from this directory (the
failover runs' counts are printed at the end of the run by tests/conftest.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
