"""python -m tools.verifytypes [--min SCORE]: pyright's type completeness of the package as
users get it (a wheel installed in a private venv under .cache/), failing below SCORE %.

pyright follows neither the editable install's path hook nor the source tree's layout for
`--verifytypes`, so the check runs on a real install, like a user's type checker would.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "verifytypes"


def run(*args: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], check=True, text=True, capture_output=True, **kw)  # type: ignore[call-overload]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.verifytypes")
    parser.add_argument(
        "--min", type=float, default=100.0, help="lowest acceptable score in %% (default 100)"
    )
    args = parser.parse_args()
    venv = CACHE / "venv"
    if not (venv / "bin" / "python").exists():
        run(sys.executable, "-m", "venv", venv)
    run(
        venv / "bin" / "python",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--force-reinstall",
        "--no-deps",
        ROOT,
    )
    run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", ROOT)  # its dependencies
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent)) or "pyright"
    # Run from outside the project: inside it, pyright would resolve `acpstack` to the sources.
    with tempfile.TemporaryDirectory() as outside:
        out = subprocess.run(
            [
                pyright,
                "--pythonpath",
                str(venv / "bin" / "python"),
                "--verifytypes",
                "acpstack",
                "--ignoreexternal",
            ],
            text=True,
            capture_output=True,
            cwd=outside,
            # pyright also asks the `python` on PATH for search paths: make it the venv's.
            env={**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"},
        ).stdout
    match = re.search(r"Type completeness score: ([0-9.]+)%", out)
    if match is None:
        print(out, file=sys.stderr)
        print("verifytypes: pyright gave no score", file=sys.stderr)
        return 1
    score = float(match.group(1))
    print(f"pyright --verifytypes acpstack: {score}% (minimum {args.min}%)")
    if score < args.min:
        print(
            "\n".join(line for line in out.splitlines() if "error" in line)[:4000], file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
