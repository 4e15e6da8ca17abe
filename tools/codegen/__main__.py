"""python -m tools.codegen [--check]: regenerate (or verify) the generated modules.

python -m tools.codegen vendor PATH: take a newer schema release (the layout of
vendor/acp-schema/) in, rewrite SHA256SUMS, regenerate, print what changed.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.codegen.generate import OUT_DIR, ROOT, generate_all

VENDOR = ROOT / "vendor" / "acp-schema"


def verify_vendor() -> list[str]:
    """The vendored schema must match its pinned sha256 list byte for byte."""
    problems = []
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        path = VENDOR / name
        if not path.exists():
            problems.append(f"missing vendored file {name}")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"vendored file {name} does not match SHA256SUMS")
    return problems


def formatted(outputs: dict[str, str]) -> dict[str, str]:
    """Run ruff format over the generated text so the files read well and diff cleanly."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in outputs.items():
            Path(tmp, name).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, name).write_text(text, encoding="utf-8")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ruff",
                "format",
                "--quiet",
                "--isolated",
                "--line-length",
                "100",
                tmp,
            ],
            check=True,
        )
        return {name: Path(tmp, name).read_text(encoding="utf-8") for name in outputs}


def vendor_main(argv: list[str]) -> int:
    from tools.codegen.vendor import vendor

    parser = argparse.ArgumentParser(prog="python -m tools.codegen vendor")
    parser.add_argument("path", type=Path, help="a schema release laid out like vendor/acp-schema")
    args = parser.parse_args(argv)
    summary = vendor(args.path.resolve(), regenerate)
    print(f"vendored {args.path} into {VENDOR}; what changed:")
    print("\n".join(summary))
    return 0


def regenerate() -> int:
    for name, text in formatted(generate_all()).items():
        (OUT_DIR / name).write_text(text, encoding="utf-8")
        print(f"wrote {OUT_DIR / name}")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["vendor"]:
        return vendor_main(sys.argv[2:])
    parser = argparse.ArgumentParser(prog="python -m tools.codegen")
    parser.add_argument(
        "--check", action="store_true", help="fail if the generated files are stale"
    )
    args = parser.parse_args()
    problems = verify_vendor()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    outputs = formatted(generate_all())
    if args.check:
        stale = False
        for name, text in outputs.items():
            path = OUT_DIR / name
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                stale = True
                diff = difflib.unified_diff(
                    current.splitlines(), text.splitlines(), str(path), "regenerated", lineterm=""
                )
                print("\n".join(list(diff)[:40]), file=sys.stderr)
        if stale:
            print("generated files are stale: run `python -m tools.codegen`", file=sys.stderr)
            return 1
        print("generated files are up to date")
        return 0
    return regenerate()


if __name__ == "__main__":
    sys.exit(main())
