"""The `acp` layer lives in compat/ (its own distribution); these tests import it from there."""

from __future__ import annotations

import sys
from pathlib import Path

COMPAT = Path(__file__).resolve().parents[2] / "compat"
if str(COMPAT) not in sys.path:
    sys.path.insert(0, str(COMPAT))
