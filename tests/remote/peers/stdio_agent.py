"""`ScriptedAgent` on stdio, for `acpstack serve -- python stdio_agent.py` (one process per
connection). When ACP_TEST_PIDS is set, it writes its pid there as a file, so tests can
check that every agent process ends with its connection."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_agent import ScriptedAgent  # noqa: E402

from acpstack import serve_stdio  # noqa: E402

if __name__ == "__main__":
    pids = os.environ.get("ACP_TEST_PIDS")
    if pids:
        Path(pids, str(os.getpid())).touch()
    serve_stdio(ScriptedAgent())
