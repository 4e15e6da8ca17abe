"""Put the `acp` compatibility layer in place of the official SDK in a virtual environment.

    python3 tools/compat_install.py VENV          # replace agent-client-protocol with the layer
    python3 tools/compat_install.py --undo VENV   # put the official package back (from PyPI)

The layer is the distribution `agent-client-protocol` at version `0.12.1+acpstack.N`: a local
version label, so an application's `agent-client-protocol==0.12.1` pin stays satisfied. The
version it replaces is remembered in the venv (`.acpstack-compat`) for `--undo`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ".acpstack-compat"
OFFICIAL = "agent-client-protocol"
DEFAULT_OFFICIAL_VERSION = "0.12.1"


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        text=True,
        capture_output=True,
    )


def installed_version(python: Path) -> str | None:
    shown = pip(python, "show", OFFICIAL)
    for line in shown.stdout.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def fail(message: str, result: subprocess.CompletedProcess[str] | None = None) -> int:
    print(f"compat-install: {message}", file=sys.stderr)
    if result is not None:
        print(result.stdout[-2000:] + result.stderr[-2000:], file=sys.stderr)
    return 1


def install(venv: Path, python: Path) -> int:
    before = installed_version(python)
    record = venv / RECORD
    if before is not None and "+acpstack" not in before:
        record.write_text(json.dumps({"replaced": before}))
    elif not record.exists():
        record.write_text(json.dumps({"replaced": None}))
    result = pip(python, "install", "--quiet", str(ROOT), str(ROOT / "compat"))
    if result.returncode != 0:
        return fail("pip could not install the layer", result)
    after = installed_version(python)
    print(f"agent-client-protocol {before or '(none)'} -> {after} (acpstack's layer)")
    check = pip(python, "check")
    print(check.stdout.strip() or "pip check: no broken requirements")
    return 0


def undo(venv: Path, python: Path) -> int:
    record = venv / RECORD
    replaced = DEFAULT_OFFICIAL_VERSION
    if record.exists():
        replaced = json.loads(record.read_text()).get("replaced") or DEFAULT_OFFICIAL_VERSION
    result = pip(python, "uninstall", "--yes", OFFICIAL)
    if result.returncode != 0:
        return fail("pip could not remove the layer", result)
    result = pip(python, "install", "--quiet", f"{OFFICIAL}=={replaced}")
    if result.returncode != 0:
        return fail(f"pip could not install the official {OFFICIAL}=={replaced}", result)
    record.unlink(missing_ok=True)
    print(f"agent-client-protocol {installed_version(python)} (the official SDK) is back")
    return 0


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--undo"]
    if len(args) != 1:
        return fail("usage: ./run compat-install [--undo] VENV")
    venv = Path(args[0]).resolve()
    python = venv / "bin" / "python"
    if not python.exists():
        return fail(f"{venv} is not a virtual environment (no bin/python)")
    return undo(venv, python) if "--undo" in argv else install(venv, python)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
