"""The chain the real-agent tests put in front of an agent: `acpstack conduct` with the
two example proxies, rules first, then audit."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
RULES = f"{PY} {ROOT / 'examples' / 'proxies' / 'rules.py'}"
AUDIT = f"{PY} {ROOT / 'examples' / 'proxies' / 'audit.py'}"
CONDUCT = [PY, "-m", "acpstack", "conduct", "--proxy", RULES, "--proxy", AUDIT, "--"]
