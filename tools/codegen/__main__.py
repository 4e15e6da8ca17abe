"""python -m tools.codegen [--check]: regenerate (or verify) the generated modules.

python -m tools.codegen vendor PATH: take a newer schema release in (upstream's layout, the
`schema/` folder with v1/ and v2/, or ours, the layout of vendor/acp-schema/; see
tools/codegen/vendor.py), keep our frozen-nes/ and README.md when the release has none,
rewrite SHA256SUMS, regenerate, and print what changed. Errors are one line on stderr
(exit 1), and the vendored copy is then left as it was.
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
    from tools.codegen.reading import CodegenError
    from tools.codegen.vendor import VendorError, vendor

    parser = argparse.ArgumentParser(
        prog="python -m tools.codegen vendor",
        description="Vendor a newer ACP schema release, regenerate, print what changed.",
    )
    parser.add_argument(
        "path",
        type=Path,
        help="a schema release: upstream's schema/ folder (v1/, v2/) or one laid out like "
        "vendor/acp-schema",
    )
    args = parser.parse_args(argv)
    try:
        summary = vendor(args.path.resolve(), regenerate)
    except (VendorError, CodegenError, OSError, subprocess.CalledProcessError) as exc:
        hint = (
            " (the vendored schema is unchanged: teach the generator the new thing, e.g. in "
            "tools/codegen/tables.py, then run the same command again)"
            if isinstance(exc, CodegenError)
            else ""
        )
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 1
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
