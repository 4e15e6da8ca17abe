"""Run the official Python SDK's own test suite (from its 0.12.1 sdist) against the `acp`
layer, file by file, and print the counts (docs/compat.md has the result and explains every
failure).

    .venv/bin/python -m tools.compat_official_suite [--keep DIR]

It downloads `agent-client-protocol==0.12.1` (sdist, no dependencies) with pip, unpacks it,
moves its `src/` aside so that `import acp` is the layer, and runs pytest on each test file
with `compat/` first on the path. Needs pytest, pytest-asyncio, pytest-timeout (the dev
extra). `tests/test_gen_all.py` (the SDK's own code generator) is left out. A few minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDIST = "agent-client-protocol==0.12.1"
SKIPPED = {"tests/test_gen_all.py"}


def fetch(into: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            SDIST,
            "-d",
            str(into),
        ],
        check=True,
    )
    archive = next(into.glob("agent_client_protocol-*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    tree = next(p for p in into.iterdir() if p.is_dir())
    (tree / "src").rename(tree / "src_official")  # `import acp` must find the layer
    return tree


def run_file(tree: Path, test: str) -> tuple[int, int, int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "compat"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-o",
            "addopts=",
            "-W",
            "default",
            test,
            "-q",
            "--timeout",
            "10",
            "--tb=no",
            "-rfE",
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout

    def count(word: str) -> int:
        found = re.findall(rf"(\d+) {word}", out.splitlines()[-1] if out.strip() else "")
        return int(found[0]) if found else 0

    failures = "\n".join(line for line in out.splitlines() if line.startswith(("FAILED", "ERROR")))
    return count("passed"), count("failed") + count("error"), count("skipped"), failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="unpack here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        base.mkdir(parents=True, exist_ok=True)
        tree = fetch(base)
        totals = [0, 0, 0]
        for test in sorted(str(p.relative_to(tree)) for p in (tree / "tests").rglob("test_*.py")):
            if test in SKIPPED:
                continue
            passed, failed, skipped, failures = run_file(tree, test)
            totals = [totals[0] + passed, totals[1] + failed, totals[2] + skipped]
            if passed == skipped == 0 and "ERROR" in failures and "FAILED" not in failures:
                print(f"{test}: not collected (imports what the layer does not provide)")
            else:
                print(f"{test}: {passed} passed, {failed} failed, {skipped} skipped")
            if failures:
                print("  " + failures.replace("\n", "\n  "))
        print(
            f"total: {totals[0]} passed, {totals[2]} skipped, of the 188 tests of 0.12.1"
            " (without test_gen_all); the rest failed or were not collected"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
