"""One fuzzing run against a real process: set up a workspace, drive, check, report."""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.fuzz._agent_side import AgentFuzzer
from tools.fuzz._harness import Stats, Target, Violation
from tools.fuzz._internal_errors import InternalErrorLog

HERE = Path(__file__).resolve().parent
README = "# Fuzz workspace\n\nA line the agent may edit: fuzz.\n"
TEST_FILE = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
)


@dataclass
class Report:
    target: str
    seed: int
    inputs: int
    seconds: float
    exit_code: int | None
    stats: Stats
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        s = self.stats
        lines = [
            f"target {self.target}: {s.inputs} lines sent ({self.inputs} fuzzed inputs, seed {self.seed}) in {self.seconds:.1f} s",
            f"  {s.lines_out} lines back: {s.answers} answers to our requests, {s.null_id_errors} errors with id null, "
            f"{s.peer_requests} requests from the peer; {s.probes} liveness probes (slowest answer {s.slowest_probe:.3f} s); exit code {self.exit_code}",
            "  error codes: "
            + ", ".join(f"{code}: {count}" for code, count in sorted(s.error_codes.items())),
            f"  violations: {len(self.violations)}",
        ]
        lines += [f"    {v}" for v in self.violations[:20]]
        return "\n".join(lines)


def make_workspace(root: Path) -> Path:
    workspace = root / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text(README)
    (workspace / "test_fuzz.py").write_text(TEST_FILE)
    return workspace


def reference_agent(store: Path) -> list[str]:
    return [sys.executable, "-m", "acpstack", "agent", "--store", str(store)]


def client_under_test(workspace: Path) -> list[str]:
    return [sys.executable, str(HERE / "client_under_test.py"), str(workspace)]


async def fuzz(
    target: str,
    inputs: int,
    seed: int,
    *,
    agent_command: Sequence[str] | None = None,
    hang_seconds: float = 10.0,
    env: dict[str, str] | None = None,
    internal_errors: Path | None = None,
) -> Report:
    """Fuzz `target` ("agent" or "client") with `inputs` inputs from `seed`; with
    `internal_errors`, write every -32603 answer there (input line, traceback, cause)."""
    recorder = InternalErrorLog() if internal_errors is not None else None
    with tempfile.TemporaryDirectory(prefix="acpstack-fuzz-") as tmp:
        root = Path(tmp)
        workspace = make_workspace(root)
        rng = random.Random(seed)
        started = time.monotonic()
        if target == "agent":
            argv = (
                list(agent_command) if agent_command else reference_agent(root / "sessions.sqlite3")
            )
            process = Target(
                argv,
                cwd=str(workspace),
                env=env,
                hang_seconds=hang_seconds,
                internal_errors=recorder,
            )
            await process.start()
            await AgentFuzzer(process, rng, workspace).run(inputs)
        else:
            from tools.fuzz._client_side import ClientFuzzer

            process = Target(
                client_under_test(workspace),
                cwd=str(workspace),
                env=env,
                hang_seconds=hang_seconds,
                internal_errors=recorder,
            )
            await process.start()
            await ClientFuzzer(process, rng, workspace).run(inputs)
        code = await process.close()
        if recorder is not None and internal_errors is not None:
            recorder.write(internal_errors)
        return Report(
            target,
            seed,
            inputs,
            time.monotonic() - started,
            code,
            process.stats,
            process.violations,
        )


def run(target: str, inputs: int, seed: int, **options: object) -> Report:
    return asyncio.run(fuzz(target, inputs, seed, **options))  # type: ignore[arg-type]
